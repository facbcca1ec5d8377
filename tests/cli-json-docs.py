# SPDX-License-Identifier: Apache-2.0
"""The JSON shapes docs/cli.md documents, against what `kernelport --json COMMAND` writes (#28).

Usage: cli-json-docs.py KERNELPORT CLI_MD REJECTED_PLUGIN_DIR

Reads every ```json block of the "JSON output" section: the shared objects (a block after a
paragraph that names it "(`NAME` below"), then one block per "### `command`" heading. In a block,
`…NAME…` spreads a shared object's keys into the enclosing object and a bare NAME stands for one.
Runs each command on the host device (peak and bench on PoCL: the host device has no peaks) and
fails on any object, at any path, whose keys differ from the documented ones, and on a command of
the CLI (its --help) that has no documented shape.
"""
import json
import os
import re
import subprocess
import sys

# What the library reads from the environment that would change what the commands see.
ENVIRONMENT = {"KP_MANIFEST", "KP_DEVICE", "KP_PLUGIN_PATH", "KP_KERNEL_DIR", "KP_PROFILE"}

# Objects keyed by the kernel's tunables, not by fixed names.
DYNAMIC = {"best", "changes"}


def commands(rejected_dir):
    """The command line that exercises each documented shape, with every array non-empty."""
    return {
        "devices": ["devices"],
        "plugins": ["--plugin-dir", rejected_dir, "plugins"],
        "kernels": ["kernels", "example.axpy"],
        "verify": ["verify", "example.axpy", "--smallest"],
        "explain": ["explain", "example.axpy"],
        "peak": ["--device", "pocl", "peak"],
        "bench": ["--device", "pocl", "bench", "example.axpy", "--size", "small", "--runs", "3", "--seconds", "0"],
        "tune": ["tune", "example.axpy", "--size", "small", "--budget", "5"],
        "warmup": ["warmup", "example"],
    }


def json_section(text):
    start = text.index("\n## JSON output")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse_block(block):
    """A documented block as JSON: spreads and bare names become markers."""
    out, pos = [], 0
    for m in STRING.finditer(block):
        out.append(mark(block[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(mark(block[pos:]))
    return json.loads("".join(out))


def mark(code):
    def one(m):
        return f'"@spread:{m.group(1)}": null' if m.group(1) else f'"@ref:{m.group(2)}"'

    return re.sub(r"…([A-Z_]+)…|\b([A-Z][A-Z_]+)\b", one, code)


def expand(value, shared):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k.startswith("@spread:"):
                out.update(expand(shared[k[len("@spread:") :]], shared))
            else:
                out[k] = expand(v, shared)
        return out
    if isinstance(value, list):
        return [expand(v, shared) for v in value]
    if isinstance(value, str) and value.startswith("@ref:"):
        return expand(shared[value[len("@ref:") :]], shared)
    return value


def key_paths(value, path, out):
    """path -> the keys of every object found there (arrays: the union over their elements)."""
    if isinstance(value, dict):
        keys = out.setdefault(path, set())
        if path.rsplit(".", 1)[-1] in DYNAMIC:
            keys.add("*")
            return out
        keys.update(value.keys())
        for k, v in value.items():
            key_paths(v, path + "." + k, out)
    elif isinstance(value, list):
        for v in value:
            key_paths(v, path + "[]", out)
    return out


def documented(text):
    section = json_section(text)
    shared, shapes = {}, {}
    heading = None
    for m in re.finditer(r"^### `([a-z]+)`$|\(`([A-Z_]+)` below|^```json\n(.*?)^```$", section,
                         re.M | re.S):
        if m.group(1):
            heading = ("command", m.group(1))
        elif m.group(2):
            heading = ("shared", m.group(2))
        elif heading:
            kind, name = heading
            (shared if kind == "shared" else shapes)[name] = parse_block(m.group(3))
            heading = None
    return {name: key_paths(expand(v, shared), "", {}) for name, v in shapes.items()}


def cli_commands(kernelport):
    help_text = subprocess.run([kernelport, "--help"], capture_output=True, text=True).stdout
    listing = help_text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


def main():
    kernelport, cli_md, rejected_dir = sys.argv[1:4]
    with open(cli_md, encoding="utf-8") as f:
        try:
            docs = documented(f.read())
        except KeyError as e:
            print(f"cli-json-docs: {cli_md} uses {e.args[0]}, which no ```json block defines")
            return 1
    failures = []
    for name in cli_commands(kernelport):
        if name != "help" and name not in docs:
            failures.append(f"{name}: the CLI has the command, docs/cli.md no JSON shape for it")
    runs = commands(rejected_dir)
    env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
    for name, want in sorted(docs.items()):
        if name not in runs:
            failures.append(f"{name}: documented, but this test does not run it")
            continue
        args = [kernelport, "--json", "--device", "host"] + runs[name]
        r = subprocess.run(args, capture_output=True, text=True, env=env)
        if r.returncode not in (0, 1):
            failures.append(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        got = key_paths(json.loads(r.stdout), "", {})
        for path in sorted(set(want) | set(got)):
            w, g = want.get(path), got.get(path)
            if w != g:
                failures.append(
                    f"{name} {path or '.'}: documented {sorted(w) if w else 'nothing'}, "
                    f"written {sorted(g) if g else 'nothing'}"
                )
    for f in failures:
        print("cli-json-docs:", f)
    print(f"cli-json-docs: {len(docs)} shapes checked, {len(failures)} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
