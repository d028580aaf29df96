"""What the planning calls return: dicts with the fields of the command
line's --json output, and for plan() the plan itself beside them."""

import json

from . import _args, _native


class PlanResult(dict):
    """plan()'s result: the fields of `swapadvisor plan --json` as a dict,
    and the plan file's text in `plan_json` (not a key, so that the keys are
    the command line's), which save() writes and verify() accepts."""

    def __init__(self, fields, plan_json):
        super().__init__(fields)
        self.plan_json = plan_json

    def save(self, path):
        """Writes the plan file, gzip-compressed when path ends in .gz, with
        the program's own writer (`swapadvisor plan -o PATH`); returns the
        path."""
        path = _args.path("path", path)
        _native.write_file(path, self.plan_json)
        return path


def fields(text):
    return json.loads(text)
