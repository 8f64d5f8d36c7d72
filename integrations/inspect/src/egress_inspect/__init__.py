"""egress-conformance's sandbox scan as an inspect_ai solver and scorer.

``egress_scan(mirror=...)`` runs ``egress-conformance sandbox-scan`` inside
the sample's sandbox before the task's own solvers; ``egress_verdict()``
scores the sample by that verdict. ``egress-netns`` is a sandbox provider
that runs each sample's commands inside a Linux network namespace.
"""

from ._netns import NetnsSandboxEnvironment
from ._scan import EgressScanFailed, egress_scan, egress_verdict

__all__ = [
    "EgressScanFailed",
    "NetnsSandboxEnvironment",
    "egress_scan",
    "egress_verdict",
]
