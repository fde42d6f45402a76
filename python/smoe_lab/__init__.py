"""SMoE Lab from Python: the coordinator's client and the trial helpers.

    from smoe_lab import Client
    c = Client()                      # finds the dashboard URL and the token as the CLI does
    c.submit("examples/sraven-demo.yaml")
    c.watch("sraven-demo")
    df = c.results("sraven-demo")     # a pandas.DataFrame when pandas is installed
    print(c.analyze("sraven-demo"))   # the optimal-k table of `smoe analyze`
    print(c.tuned("sraven-lr", "lr")) # k at each k's own best lr (`smoe analyze --tune lr`)

A kind: command program reports through smoe_lab.trial (docs/python.md).
"""

from .client import (Analysis, Client, Tuned, format_analysis, format_tuned, resolve_token,
                     resolve_url)
from .errors import (BadRequest, Conflict, CoordinatorUnavailable, NotFound,
                     ServerError, SmoeError, SweepInvalid, Unauthorized, UsageError)

__all__ = [
    "Analysis", "BadRequest", "Client", "Conflict", "CoordinatorUnavailable",
    "NotFound", "ServerError", "SmoeError", "SweepInvalid", "Tuned", "Unauthorized",
    "UsageError", "format_analysis", "format_tuned", "resolve_token", "resolve_url",
]
__version__ = "0.1.0"
