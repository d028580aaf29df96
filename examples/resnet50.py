"""torchvision ResNet-50, by default batch 32 of 224x224 images, 1000 classes
(ImageNet's shapes). The sizes are build()'s keyword arguments, set with
`--entry-arg KEY=VALUE` without editing this file:

    swapadvisor-capture examples/resnet50.py --device cuda -o out/resnet50
    swapadvisor-capture examples/resnet50.py --entry-arg batch=4 --entry-arg image_size=64 \\
        --entry-arg num_classes=10 -o out/resnet50-small
    swapadvisor-capture eager examples/resnet50.py --device cuda --save-on-cpu \\
        --warmup 2 --iterations 10 --json

bench/torch-throughput trains it under a plan against eager PyTorch.
"""
import torch
import torchvision


def build(batch=32, image_size=224, num_classes=1000):
    model = torchvision.models.resnet50(num_classes=num_classes)

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        images = torch.randn(batch, 3, image_size, image_size, generator=g)
        labels = torch.randint(0, num_classes, (batch,), generator=g)
        return images, labels

    return model, make_batch, torch.nn.CrossEntropyLoss()
