"""Any torchvision classification model by name, by default batch 32 of
224x224 images, 1000 classes. The model and sizes are build()'s keyword
arguments:

    swapadvisor-capture examples/torchvision_cnn.py --entry-arg model=mobilenet_v2 \\
        --entry-arg batch=128 --autocast bf16 -o out/mobilenet_v2-b128-bf16

tests/data/amp/README.md lists the captures made with it.
"""
import torch
import torchvision


def build(model="resnet50", batch=32, image_size=224, num_classes=1000):
    net = getattr(torchvision.models, model)(num_classes=num_classes)

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        images = torch.randn(batch, 3, image_size, image_size, generator=g)
        labels = torch.randint(0, num_classes, (batch,), generator=g)
        return images, labels

    return net, make_batch, torch.nn.CrossEntropyLoss()
