"""The solver that runs the scan inside the sample's sandbox, and the
scorer that reads its verdict."""

import hashlib
import json
import shlex
from typing import Any, Literal

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox, store

#: Where the verdict goes: ``state.metadata[KEY]`` and ``store()[KEY]``.
KEY = "egress"


class EgressScanFailed(RuntimeError):
    """The sandbox has a way out besides the mirror (or the scan could not
    tell): raised by ``egress_scan(on_fail="eval")``, which stops the eval."""


def _failing(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"id": r.get("id"), "status": r.get("status"), "reason": r.get("reason"), "paths": r.get("paths", [])}
        for r in report.get("records", [])
        if r.get("status") in ("FAIL", "INCONCLUSIVE")
    ]


@solver
def egress_scan(
    mirror: str,
    *,
    binary: str | None = None,
    canary: list[str] | None = None,
    sandbox_name: str | None = None,
    on_fail: Literal["sample", "eval"] = "sample",
    timeout: int = 180,
) -> Solver:
    """Runs ``egress-conformance sandbox-scan --mirror MIRROR`` inside the
    sample's sandbox before the solvers after it.

    Args:
        mirror: the mirror's index URL as the sandbox reaches it, e.g.
            ``http://mirror:8080/simple/``.
        binary: a host path of the ``egress-conformance`` binary, copied
            into the sandbox; without it, ``egress-conformance`` must be on
            the sandbox's PATH.
        canary: canary addresses (``IP:PORT``) the sandbox must not reach.
        sandbox_name: the sandbox environment to scan (default: the
            sample's default one).
        on_fail: ``"sample"``: a sample whose scan is not PASS ends there
            (the task's solvers do not run) and ``egress_verdict`` scores
            it incorrect; ``"eval"``: raise ``EgressScanFailed``, which
            stops the eval.
        timeout: seconds the scan may take.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sb = sandbox(sandbox_name) if sandbox_name else sandbox()
        exe = "egress-conformance"
        if binary is not None:
            exe = "/tmp/egress-conformance"
            with open(binary, "rb") as f:
                await sb.write_file(exe, f.read())
            chmod = await sb.exec(["chmod", "755", exe])
            if not chmod.success:
                raise EgressScanFailed(f"cannot make {exe} executable in the sandbox: {chmod.stderr}")
        out = f"/tmp/egress-scan-{state.uuid}"
        args = [exe, "sandbox-scan", "--mirror", mirror, "--format", "json", "--out", out]
        for c in canary or []:
            args += ["--canary", c]
        result = await sb.exec(args, timeout=timeout)
        try:
            report_bytes = await sb.read_file(f"{out}/scan.json", text=False)
        except FileNotFoundError:
            raise EgressScanFailed(
                f"sandbox-scan wrote no report (exit {result.returncode}): {result.stderr.strip()[:500]}"
            ) from None
        report = json.loads(report_bytes)
        verdict = report.get("outcome", "INCONCLUSIVE")
        info = {
            "verdict": verdict,
            "report_sha256": hashlib.sha256(report_bytes).hexdigest(),
            "exit_code": result.returncode,
            "mirror": mirror,
            "command": shlex.join(args),
            "failing": _failing(report),
            "notices": [
                {k: n.get(k) for k in ("check", "kind", "configured", "place")}
                for n in report.get("notices", [])
            ],
        }
        state.metadata[KEY] = info
        store().set(KEY, info)
        if verdict != "PASS":
            first = info["failing"][0] if info["failing"] else {}
            why = f"{first.get('id')}: {first.get('reason')}" if first else "no check passed"
            message = f"egress sandbox-scan {verdict} in the sample's sandbox ({why}); report sha256 {info['report_sha256']}"
            if on_fail == "eval":
                raise EgressScanFailed(message)
            state.output.completion = message
            state.completed = True
        return state

    return solve


@scorer(metrics=[accuracy()])
def egress_verdict() -> Scorer:
    """CORRECT when the sample's sandbox scan was PASS, else INCORRECT, with
    the failing checks as the explanation."""

    async def score(state: TaskState, target: Target) -> Score:
        info = state.metadata.get(KEY) or store().get(KEY)
        if not info:
            return Score(value=INCORRECT, answer="NOT RUN", explanation="egress_scan did not run in this sample")
        explanation = "; ".join(
            f"{f['id']} {f['status']}: {f['reason']}" for f in info.get("failing", [])
        ) or "the mirror is the only thing the sandbox reaches"
        return Score(
            value=CORRECT if info["verdict"] == "PASS" else INCORRECT,
            answer=info["verdict"],
            explanation=explanation,
            metadata={"report_sha256": info["report_sha256"]},
        )

    return score
