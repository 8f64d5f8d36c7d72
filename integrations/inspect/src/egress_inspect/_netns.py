"""The ``egress-netns`` sandbox provider: each sample's commands run inside
a Linux network namespace the lab made (``ip netns add``), with a cleared
environment, so that the namespace's routes and resolvers are the only
network the sample sees. Files are the host's (as inspect's ``local``
provider), and the namespace's own ``/etc/netns/NAME`` files are bound
over ``/etc`` by ``ip netns exec``.

Name the namespace in the task: ``sandbox=("egress-netns", "NAME")``, or
in the ``EGRESS_NETNS`` environment variable. Needs root (or
CAP_SYS_ADMIN) for ``ip netns exec``.
"""

import os
import shutil
from typing import Any

from inspect_ai.util import ExecResult, SandboxEnvironment, sandboxenv
from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

# What a command inside the namespace inherits: nothing of the host's
# environment (no proxy variables, no tokens) but a PATH and a HOME.
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _ip() -> str:
    for candidate in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"):
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which("ip")
    if found is None:
        raise RuntimeError("egress-netns: no `ip` (iproute2) on this host")
    return found


@sandboxenv(name="egress-netns")
class NetnsSandboxEnvironment(LocalSandboxEnvironment):
    """inspect's local sandbox, every command run in a network namespace."""

    def __init__(self, netns: str) -> None:
        super().__init__()
        self.netns = netns

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: Any,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        # inspect resolves a config string against the task's directory,
        # as it would a config file: the namespace is its last component.
        netns = os.path.basename(config) if isinstance(config, str) and config else None
        netns = netns or os.environ.get("EGRESS_NETNS")
        if not netns:
            raise ValueError(
                'egress-netns: name the network namespace: sandbox=("egress-netns", "NAME") or EGRESS_NETNS=NAME'
            )
        if not os.path.exists(os.path.join("/run/netns", netns)):
            raise ValueError(f"egress-netns: no network namespace {netns!r} (ip netns add {netns})")
        return {"default": cls(netns)}

    async def exec(  # type: ignore[override]
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        **kwargs: Any,
    ) -> ExecResult[str]:
        home = self.directory.name
        wrapped = [_ip(), "netns", "exec", self.netns, "env", "-i", f"PATH={_PATH}", f"HOME={home}"]
        wrapped += [f"{k}={v}" for k, v in (env or {}).items()]
        return await super().exec(
            wrapped + list(cmd), input=input, cwd=cwd, env=None, user=user, timeout=timeout, **kwargs
        )
