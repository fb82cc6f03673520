"""Export a trained LSTM policy to ONNX: one time step, (obs, h, c) -> (logits, h_out, c_out).

The graph uses elementary operators only (MatMul, Add, Sigmoid, Tanh, Mul, ...), which the C++
sender's own runtime runs; its metadata holds the observation scaling, the action set
and the step. After writing, the file is checked against PyTorch with onnxruntime over
observations of a simulated run. Examples:

  ccgym export runs/quick                 # the newest quick run: writes its policy.onnx
  ccgym export generalist -o generalist.onnx   # the packaged generalist, exported again
  ccgym export runs/quick -o policy.onnx
  ccgym export runs/quick__1__20250101-120000/policy.pt -o /tmp/indigo.onnx
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ccgym import flags
from ccgym.errors import UserError
from ccgym.files import atomic_path, check_not_input, check_output
from ccgym.policies import packaged_policies
from ccgym.policies.policy_path import resolve_policy_path

ONNX_SUFFIX = ".onnx"

# The check's run: a mid-grid link, long enough for the recurrent state to settle.
CHECK_LINK = "rate_mbps=12,delay_ms=20"
CHECK_STEPS = 300
CHECK_TOLERANCE = 1e-4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policy", metavar="RUN_DIR_OR_PT",
                        help="a run folder (its policy.pt), a policy .pt file or a packaged policy's "
                             "name (`ccgym policies`)")
    parser.add_argument("-o", "--output", metavar="OUT.onnx",
                        type=flags.output((ONNX_SUFFIX,), stdout=False, what="an ONNX model"),
                        help="where to write (default: policy.onnx beside the policy); a name "
                             "that does not end in .onnx is refused")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the onnxruntime-versus-PyTorch check")


def run(args: argparse.Namespace) -> int:
    from ccgym.deploy.export import export_policy, max_difference, recorded_observations
    from ccgym.policies.lstm import LstmPolicy

    source = resolve_policy_path(args.policy)
    if source.suffix.lower() == ONNX_SUFFIX:
        raise UserError(f"{source} is already ONNX (it runs as lstm:{source}); give a run "
                        "folder or a .pt policy to export")
    try:
        policy = LstmPolicy.load(source)
    except (ValueError, RuntimeError, OSError) as e:
        raise UserError(f"{source}: cannot load the policy: {e}") from e
    if not args.output and packaged_policies.shipped_onnx(source) is not None:
        raise UserError(f"{args.policy}: a packaged policy, whose ONNX export ships beside it "
                        f"({packaged_policies.shipped_onnx(source)}); give -o OUT.onnx to export it again")
    # -o was checked as it was parsed (flags.output); the default lies beside the source.
    output = Path(args.output) if args.output else source.with_suffix(ONNX_SUFFIX)
    problem = check_output(output, stdout=False)
    if problem:
        raise UserError(f"cannot write the ONNX model: {problem} (give -o OUT.onnx)")
    check_not_input(output, [source], "-o")
    # The model is checked before it reaches the output: a wrong export replaces nothing.
    with atomic_path(output) as model:
        export_policy(policy, model)
        size = model.stat().st_size
        if not args.no_check:
            observations = recorded_observations(CHECK_LINK, CHECK_STEPS,
                                                 version=policy.observation_version)
            worst = max_difference(policy, model, observations)
            print(f"onnxruntime vs PyTorch over {CHECK_STEPS} steps: max |difference| "
                  f"{worst:.2e}")
            if worst > CHECK_TOLERANCE:
                raise UserError(f"{output}: onnxruntime and PyTorch differ by {worst:.2e} "
                                f"(> {CHECK_TOLERANCE:g}); the export is wrong, nothing written")
    print(f"wrote {output} (hidden size {policy.hidden_size}, {size} bytes)")
    return 0
