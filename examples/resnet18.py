"""torchvision ResNet-18, batch 8 of 64x64 images, 10 classes.

    swapadvisor-capture examples/resnet18.py --optimizer sgd -o out/resnet18
"""
import torch
import torchvision


def build():
    model = torchvision.models.resnet18(num_classes=10)

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        images = torch.randn(8, 3, 64, 64, generator=g)
        labels = torch.randint(0, 10, (8,), generator=g)
        return images, labels

    return model, make_batch, torch.nn.CrossEntropyLoss()
