"""Domain errors; the CLI turns each into ``Error: ...`` on stderr and exit status 1."""


class CachediagError(Exception):
    """Base of every error cachediag reports to the user."""


class InputError(CachediagError):
    """A path or input that cannot be read at all."""


class NotALogError(InputError):
    """A file that is readable but is not a log cachediag understands."""


class PricingError(CachediagError):
    """A price file that cannot be read or is not in a format cachediag knows."""


class WorkerError(CachediagError):
    """A worker process died without sending its results (killed, or crashed)."""


class UsageError(CachediagError):
    """Options that contradict each other or a value no command can use: the command
    line's usage error (``Usage:`` line, exit status 2) once it reaches the click group."""
