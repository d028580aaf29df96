class CaptureError(Exception):
    """A model, op or argument the capture cannot represent faithfully.

    The message names the op (its position in the recorded stream, its ATen
    overload, the phase and, in the forward pass, the module) and says why.
    """
