"""torchvision MobileNetV2, batch 8 of 64x64 images, 10 classes. The
classifier's dropout is off (dropout=0.0) so that a replay is deterministic:
with dropout, a replay draws new masks (the capture warns about random ops).

    swapadvisor-capture examples/mobilenet_v2.py --optimizer sgd -o out/mobilenet_v2
"""
import torch
import torchvision


def build():
    model = torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0)

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        images = torch.randn(8, 3, 64, 64, generator=g)
        labels = torch.randint(0, 10, (8,), generator=g)
        return images, labels

    return model, make_batch, torch.nn.CrossEntropyLoss()
