"""Typed errors of the SMoE Lab client.

Every error carries the coordinator's message (``str(e)``), the HTTP status
(``e.status``, 0 when no answer came) and the exit code ``smoe`` gives the
same failure (``e.exit_code``, sysexits: 64 usage, 65 invalid sweep file or
a state that refuses the action, 66 not found, 69 coordinator unreachable,
77 missing or wrong token or role).
"""


class SmoeError(Exception):
    """Base class: a call the coordinator (or the client) refused."""

    exit_code = 70

    def __init__(self, message, status=0):
        super().__init__(message)
        self.message = message
        self.status = status


class UsageError(SmoeError):
    """Bad arguments to a client call, refused before anything was sent."""

    exit_code = 64


class BadRequest(SmoeError):
    """HTTP 400: the coordinator refused the input (the message names the field and value)."""

    exit_code = 65


class SweepInvalid(BadRequest):
    """A sweep file (or an extension) the coordinator refused: ``problems`` lists every problem."""

    def __init__(self, message, status=400, problems=None):
        super().__init__(message, status)
        self.problems = list(problems or [message])


class Conflict(SmoeError):
    """HTTP 409: the sweep's or trial's state refuses the action (e.g. deleting a sweep with live trials)."""

    exit_code = 65


class NotFound(SmoeError):
    """HTTP 404: no such sweep, trial, attempt or artifact."""

    exit_code = 66


class Unauthorized(SmoeError):
    """HTTP 401 (no or a wrong token) or 403 (a role that may not): ``role_needed`` names the role."""

    exit_code = 77

    def __init__(self, message, status=401, role_needed=None):
        super().__init__(message, status)
        self.role_needed = role_needed


class CoordinatorUnavailable(SmoeError):
    """The coordinator did not answer (not running, wrong URL) or answered 503."""

    exit_code = 69


class ServerError(SmoeError):
    """HTTP 5xx other than 503: a coordinator bug or a failing store."""

    exit_code = 70
