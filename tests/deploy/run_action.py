#!/usr/bin/env python3
"""Runs the composite action in action.yml as GitHub's runner does, for tests/github_action.rs.

    run_action.py [--input NAME=VALUE]... [--lint]

Each step in order: its `if:` decided, the `${{ }}` expressions in its `env:` replaced, its `run:`
script written to a file and run with `bash --noprofile --norc -eo pipefail FILE` (what
`shell: bash` means on a runner), with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_ACTION_PATH and
RUNNER_TEMP set, and the step's outputs read back from its GITHUB_OUTPUT file. A failing step ends
the action with its exit code, as on a runner. The action's outputs, the summary and the exit code
are printed as one JSON object on stdout.

Only the expressions the action uses are known here (inputs.*, github.action_path, runner.temp,
steps.ID.outputs.NAME, and `inputs.NAME == ''` or `!= ''` in `if:`); any other is refused, so a
change to action.yml the runner would read differently cannot pass unnoticed. An input the action
does not declare is refused too (the runner warns, and the value is lost).

--lint runs shellcheck over each step's script instead, as bash, with the `${{ }}` kept out of the
scripts (they are only in `env:`, where no shell parses them).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expression, context):
    """The value of one expression of the few the action uses."""
    m = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)\s*(==|!=)\s*''", expression)
    if m:
        equal = context["inputs"][m.group(1)] == ""
        return equal if m.group(2) == "==" else not equal
    m = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)", expression)
    if m:
        return context["inputs"][m.group(1)]
    m = re.fullmatch(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)", expression)
    if m:
        # A skipped step, or an output not set, is the empty string.
        return context["steps"].get(m.group(1), {}).get(m.group(2), "")
    if expression == "github.action_path":
        return context["action_path"]
    if expression == "runner.temp":
        return context["runner_temp"]
    raise SystemExit(f"run_action.py: an expression this runner does not know: {expression!r}")


def substitute(text, context):
    return EXPRESSION.sub(lambda m: str(evaluate(m.group(1), context)), str(text))


def read_outputs(path):
    """NAME=VALUE lines, and NAME<<DELIMITER blocks, as the runner reads GITHUB_OUTPUT."""
    outputs, lines = {}, Path(path).read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        name, value = line.split("=", 1)
        outputs[name] = value
        i += 1
    return outputs


def main():
    args = sys.argv[1:]
    given, lint = {}, False
    while args:
        arg = args.pop(0)
        if arg == "--lint":
            lint = True
        elif arg == "--input":
            name, value = args.pop(0).split("=", 1)
            given[name] = value
        else:
            raise SystemExit(f"run_action.py: unknown argument {arg}")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    declared = action["inputs"]
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise SystemExit(f"run_action.py: inputs the action does not declare: {unknown}")
    runs = action["runs"]
    assert runs["using"] == "composite", runs["using"]

    if lint:
        for step in runs["steps"]:
            assert "${{" not in step["run"], f"step {step['name']!r}: an expression inside run:"
            out = subprocess.run(["shellcheck", "-s", "bash", "-"], input=step["run"], text=True, capture_output=True)
            if out.returncode != 0:
                print(f"step {step['name']!r}:\n{out.stdout}{out.stderr}")
                sys.exit(1)
        print("shellcheck: every step clean")
        return

    temp = Path(tempfile.mkdtemp(prefix="run-action-"))
    summary = temp / "step-summary.md"
    summary.touch()
    context = {
        # The runner passes an input's default when the workflow gives none.
        "inputs": {name: given.get(name, str(spec.get("default", ""))) for name, spec in declared.items()},
        "steps": {},
        "action_path": str(ROOT),
        "runner_temp": str(temp),
    }
    code = 0
    for number, step in enumerate(runs["steps"]):
        assert step.get("shell") == "bash", f"step {step['name']!r}: shell {step.get('shell')!r}"
        condition = step.get("if")
        if condition is not None and not evaluate(EXPRESSION.sub(r"\1", condition).strip(), context):
            continue
        output = temp / f"output-{number}"
        output.touch()
        script = temp / f"step-{number}.sh"
        script.write_text(step["run"])
        env = dict(os.environ)
        env.update({name: substitute(value, context) for name, value in (step.get("env") or {}).items()})
        env.update(
            GITHUB_OUTPUT=str(output),
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_ACTION_PATH=str(ROOT),
            RUNNER_TEMP=str(temp),
        )
        # In the workflow's workspace (here: where this runs); the step's own output goes to stderr,
        # so that stdout holds the JSON below alone.
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]
        done = subprocess.run(command, env=env, stdout=sys.stderr)
        if "id" in step:
            context["steps"][step["id"]] = read_outputs(output)
        if done.returncode != 0:
            code = done.returncode
            break
    outputs = {name: substitute(spec["value"], context) for name, spec in action.get("outputs", {}).items()}
    print(json.dumps({"exit_code": code, "outputs": outputs, "summary": summary.read_text()}))
    sys.exit(code)


if __name__ == "__main__":
    main()
