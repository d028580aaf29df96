"""torchvision ResNet-18, batch 8 of 64x64 images, 10 classes. The sizes
are build()'s keyword arguments (`--entry-arg batch=4 --entry-arg
image_size=32`, as for examples/resnet50.py).

    swapadvisor-capture examples/resnet18.py --optimizer sgd -o out/resnet18
"""
import torch
import torchvision


def build(batch=8, image_size=64, num_classes=10):
    model = torchvision.models.resnet18(num_classes=num_classes)

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        images = torch.randn(batch, 3, image_size, image_size, generator=g)
        labels = torch.randint(0, num_classes, (batch,), generator=g)
        return images, labels

    return model, make_batch, torch.nn.CrossEntropyLoss()
