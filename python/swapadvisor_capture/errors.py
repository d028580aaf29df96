import contextlib


class CaptureError(Exception):
    """A user mistake: an entry point, model, op or argument the capture
    cannot represent faithfully, or a bad option or file. The command line
    prints it as one line (cli.main), never as a traceback.

    The message says what is wrong and, after a "; ", what to do. Errors
    about the entry point (its build(), model, batch, loss, optimizer or
    ops) get the entry file's name in front (in_entry); entry=False marks
    one that is not about the file (a command-line option) and gets none.
    An error about an op names it (its position in the recorded stream, its
    ATen overload, the phase and, in the forward pass, the module).
    """

    def __init__(self, message, entry=True):
        super().__init__(message)
        self.message = message
        self.path = None
        self.about_entry = entry

    def __str__(self):
        return f"{self.path}: {self.message}" if self.path else self.message


@contextlib.contextmanager
def in_entry(path):
    """Puts the entry file's name in front of the CaptureErrors about it
    raised inside (the innermost in_entry wins)."""
    try:
        yield
    except CaptureError as e:
        if e.path is None and e.about_entry:
            e.path = path
        raise
