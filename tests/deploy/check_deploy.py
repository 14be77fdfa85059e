#!/usr/bin/env python3
"""Validates everything under deploy/ the way a cluster would see it.

1. Renders: plain manifests as they are, the kustomize example overlay (kubectl kustomize), and the
   Helm values through a test chart that renders extraInitContainers (plain toYaml, no tpl) and
   extraEnv (tpl) as the oauth2-proxy chart 10.7.0 does.
2. Schema: every rendered document passes `kubernetes-validate --strict` for each version given.
3. Policy: every container passes Pod Security "restricted" and carries resources and
   terminationMessagePolicy: FallbackToLogsOnError.
4. Interface: every wait-for-idp container's args and env (ConfigMaps resolved; a command after
   `--` included) are accepted by the binary's own parsing (`--dry-run`), so a renamed flag or a typo in a variable fails here;
   and where the workload names its issuer (--oidc-issuer-url, OAUTH2_PROXY_OIDC_ISSUER_URL), its
   JWKS (JWKS_URL) or its MCP server (MCP_SERVER_URL), the gate waits for that very one; where the
   workload is oauth2-proxy, the gate fetches the very discovery URL the proxy will.
5. Templates: a `{{ .Values.x }}` in extraInitContainers reaches the init container as literal text
   (the chart does not render it there, unlike extraEnv), and the gate's --dry-run on it exits 2.
6. The `kubectl run` recipe in docs/deploy.md: the Pod it makes (kubectl's generated Pod with its
   --overrides applied as its --override-type says) passes the schema and Pod Security
   "restricted", still runs the gate with the recipe's arguments, and the binary accepts them.
7. Native sidecars (an init container with restartPolicy: Always): validated only for Kubernetes
   versions that have them (1.29 and later, 1.29 itself always); the gate serves (--serve, as its
   --dry-run says) on a port of its own container and on the pod's address only (status.podIP, where
   the kubelet probes, not every address), and its startupProbe asks that port for /readyz.
   The PodMonitor example selects the sidecar recipe's pods and scrapes /metrics on that port.
8. deploy/policy/ (a MutatingAdmissionPolicy and its bindings) passes the schema for 1.36 and 1.37,
   whatever -k says: the API is served from 1.36. wait-for-idp.yaml's v1beta1 variant, made by the
   sed line its header gives for 1.34 and 1.35, passes the schema of 1.34 and 1.35. What they
   inject is checked on a real API server.

Usage: check_deploy.py --bin PATH --kubectl PATH --helm PATH --ca PEM --token FILE -k 1.25 -k 1.37
Prints one line per check and a closing "deploy: N passed, M failed".
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
RESULTS = {"passed": 0, "failed": 0}


def dry_run(argv):
    """argv with --dry-run added among the gate's own flags: after `--`, it would be the command's."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i] + ["--dry-run"] + argv[i:]
    return argv + ["--dry-run"]


def check(name, ok, detail=""):
    RESULTS["passed" if ok else "failed"] += 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f"\n     {detail}" if detail and not ok else ""))


def rendered(args):
    """Yields (source name, list of documents)."""
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        yield path.relative_to(ROOT).as_posix(), list(yaml.safe_load_all(path.read_text()))
    for overlay in sorted((DEPLOY / "kustomize").glob("*/kustomization.yaml")):
        if yaml.safe_load(overlay.read_text()).get("kind") != "Kustomization":
            continue
        name = overlay.parent.name
        out = subprocess.run([args.kubectl, "kustomize", str(overlay.parent)], capture_output=True, text=True)
        check(f"kustomize {name} renders", out.returncode == 0, out.stderr)
        yield f"kustomize {name} (rendered)", list(yaml.safe_load_all(out.stdout))
    for values in sorted((DEPLOY / "helm").glob("*.yaml")):
        out = subprocess.run([args.helm, "template", "t", str(ROOT / "tests" / "deploy" / "chart"), "-f", str(values)],
                             capture_output=True, text=True)
        check(f"helm {values.name} renders through the oauth2-proxy-shaped chart", out.returncode == 0, out.stderr)
        yield f"helm {values.name} (rendered)", list(yaml.safe_load_all(out.stdout))


SIDECARS_FROM = (1, 29)


def version_tuple(version):
    return tuple(int(part) for part in version.split(".")[:2])


def has_native_sidecar(docs):
    return any(c.get("restartPolicy") == "Always"
               for d in docs if pod_spec(d) for c in pod_spec(d).get("initContainers") or [])


def schema_versions(docs, versions):
    """The versions to validate `docs` for: those that have native sidecars, when they use one."""
    if not has_native_sidecar(docs):
        return versions
    first = ".".join(map(str, SIDECARS_FROM))
    return [first] + [v for v in versions if version_tuple(v) > SIDECARS_FROM]


def port_number(container, port):
    """A probe's port (a number or the name of one of the container's ports) as a number."""
    if isinstance(port, int):
        return port
    return next((p.get("containerPort") for p in container.get("ports") or [] if p.get("name") == port), None)


def sidecar_check(where, container, dry_run_stdout):
    """Check 7: a native sidecar serves on a port of its own, and its startupProbe asks it for /readyz."""
    served = next((line.split()[1] for line in dry_run_stdout.splitlines() if line.split()[:1] == ["--serve"]), "off")
    port = int(served.rsplit(":", 1)[1]) if ":" in served else None
    own = {p.get("containerPort") for p in container.get("ports") or []}
    probe = ((container.get("startupProbe") or {}).get("httpGet")) or {}
    check(f"{where}: a native sidecar serving on a port of its own container", port is not None and port in own,
          f"--serve is {served}, the container's ports {sorted(own)}")
    host = served.rsplit(":", 1)[0] if ":" in served else ""
    check(f"{where}: serving on the pod's address only, where the kubelet probes", host == POD_IP,
          f"--serve is {served}: an empty host, 0.0.0.0 or [::] is every address of the pod")
    check(f"{where}: its startupProbe asks that port for /readyz",
          probe.get("path") == "/readyz" and port_number(container, probe.get("port")) == port,
          f"startupProbe.httpGet {probe}, --serve {served}")


def podmonitor_check():
    """Check 7: the PodMonitor scrapes /metrics from the sidecar recipe's gate."""
    monitor = yaml.safe_load((DEPLOY / "prometheus" / "podmonitor.yaml").read_text())
    recipe = yaml.safe_load((DEPLOY / "kubernetes" / "sidecar.yaml").read_text())
    template = recipe["spec"]["template"]
    gate = next(c for c in template["spec"]["initContainers"] if c["name"] == "wait-for-idp")
    labels = template["metadata"].get("labels") or {}
    selector = monitor["spec"]["selector"]["matchLabels"]
    endpoints = monitor["spec"]["podMetricsEndpoints"]
    check("deploy/prometheus/podmonitor.yaml: selects the sidecar recipe's pods",
          monitor.get("kind") == "PodMonitor" and selector.items() <= labels.items(), f"{selector} vs {labels}")
    check("deploy/prometheus/podmonitor.yaml: scrapes /metrics on the gate's port",
          any(e.get("path") == "/metrics" and port_number(gate, e.get("port")) for e in endpoints), f"{endpoints}")


POLICIES_FROM = ("1.36", "1.37")
# Kubernetes 1.34 and 1.35 serve MutatingAdmissionPolicy as v1beta1 (behind a feature gate).
BETA_POLICIES = ("1.34", "1.35")


def policy_check():
    """deploy/policy/: the MutatingAdmissionPolicy and its bindings (admissionregistration.k8s.io/v1,
    served from 1.36) pass the schema. What they inject is checked on a real API server
    (tests/admission.rs), since only that evaluates the CEL."""
    for path in sorted((DEPLOY / "policy").glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        validate_schema(path.relative_to(ROOT).as_posix(), docs, POLICIES_FROM)
    # The variant for 1.34 and 1.35, made as the policy's header says.
    path = DEPLOY / "policy" / "wait-for-idp.yaml"
    sed = "s#^apiVersion: admissionregistration.k8s.io/v1$#&beta1#"
    check("wait-for-idp.yaml's header gives the v1beta1 sed line", f"sed '{sed}'" in path.read_text())
    out = subprocess.run(["sed", sed, str(path)], capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    check("the v1beta1 variant names v1beta1 in each document",
          all(d["apiVersion"] == "admissionregistration.k8s.io/v1beta1" for d in docs), str([d["apiVersion"] for d in docs]))
    validate_schema("deploy/policy/wait-for-idp.yaml as v1beta1 (sed)", docs, BETA_POLICIES)


def validate_schema(where, docs, versions):
    """`kubernetes-validate --strict` on `docs` for each Kubernetes version, a check each."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(docs, f)
        tmp = f.name
    for version in versions:
        out = subprocess.run(["kubernetes-validate", "--strict", "--quiet", "-k", version, tmp],
                             capture_output=True, text=True)
        check(f"{where}: kubernetes-validate --strict -k {version}", out.returncode == 0,
              (out.stdout + out.stderr).strip())
    os.unlink(tmp)


def pod_spec(doc):
    kind = doc.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"):
        return doc["spec"]["template"]["spec"]
    if kind == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if kind == "Pod":
        return doc["spec"]
    return None


def restricted_problems(pod, container, operational=True):
    """Pod Security Standards, profile restricted, plus (operational) our own rules for the kit."""
    sc = container.get("securityContext") or {}
    psc = pod.get("securityContext") or {}
    problems = []
    if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")):
        problems.append("runAsNonRoot")
    if sc.get("runAsUser", psc.get("runAsUser", 1)) == 0:
        problems.append("runAsUser 0")
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation: false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        problems.append("capabilities.drop: [ALL]")
    if set((sc.get("capabilities") or {}).get("add") or []) - {"NET_BIND_SERVICE"}:
        problems.append("capabilities.add beyond NET_BIND_SERVICE")
    seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        problems.append("seccompProfile RuntimeDefault")
    if sc.get("privileged"):
        problems.append("privileged")
    if sc.get("readOnlyRootFilesystem") is not True:
        problems.append("readOnlyRootFilesystem")
    if not operational:
        return problems
    res = container.get("resources") or {}
    if not res.get("requests") or not (res.get("limits") or {}).get("memory"):
        problems.append("resources requests and a memory limit")
    if container.get("terminationMessagePolicy") != "FallbackToLogsOnError":
        problems.append("terminationMessagePolicy: FallbackToLogsOnError")
    return problems


# ConfigMaps that a recipe has its user make (in no rendering), as its command makes them:
# token-proxy-jwks.yaml's api-server-issuer, from the API server's own discovery document.
MADE_BY_THE_USER = {"api-server-issuer": {"issuer": "https://oidc.eks.example.test/id/0123456789ABCDEF"}}


# The address the kubelet gives status.podIP in these checks.
POD_IP = "10.244.0.7"


def expand(text, env):
    """`$(NAME)` replaced by an earlier variable's value, as the kubelet expands env values and args
    (`$$` is a literal `$`; a name not defined stays as written)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def gate_invocation(container, configmaps, ca, token):
    """The argv and environment the kubelet would give a wait-for-idp container."""
    env = {}
    for source in container.get("envFrom") or []:
        ref = (source.get("configMapRef") or {}).get("name")
        if ref is not None:
            data = configmaps.get(ref)
            if data is None:
                return None, None, f"envFrom names ConfigMap {ref!r}, which the rendering does not contain"
            env.update({(source.get("prefix") or "") + k: v for k, v in data.items()})
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = expand(item["value"], env)
        elif (item["valueFrom"].get("fieldRef") or {}).get("fieldPath") == "status.podIP":
            env[item["name"]] = POD_IP
        elif "valueFrom" in item:
            ref = item["valueFrom"].get("configMapKeyRef") or {}
            data = configmaps.get(ref.get("name")) or MADE_BY_THE_USER.get(ref.get("name")) or {}
            env[item["name"]] = data.get(ref.get("key"), "placeholder-from-valueFrom")
    argv = [expand(a, env) for a in list(container.get("command") or []) + list(container.get("args") or [])]
    # The gate named as the container's command (its image is the workload's, the gate copied
    # in): the program is not one of its arguments.
    if argv and argv[0].endswith("/wait-for-idp"):
        argv = argv[1:]
    # Files that exist only in a pod (mounted CA bundles) are replaced by a real test CA.
    argv = [a.split("=")[0] + "=" + ca if a.startswith("--ca-file=") else a for a in argv]
    argv = [ca if prev == "--ca-file" else a for prev, a in zip([""] + argv, argv)]
    for key in ("WAIT_FOR_IDP_CA_FILE", "OAUTH2_PROXY_PROVIDER_CA_FILES"):
        if key in env:
            env[key] = ca
    if "WAIT_FOR_IDP_TOKEN_FILE" in env:
        env["WAIT_FOR_IDP_TOKEN_FILE"] = token
    argv = [token if prev == "--token-file" else a for prev, a in zip([""] + argv, argv)]
    argv = [a.split("=")[0] + "=" + token if a.startswith("--token-file=") else a for a in argv]
    return argv, env, None


# What a workload names, and the line of the gate's --dry-run that must name the same.
WORKLOAD_SETTINGS = {
    "--oidc-issuer-url": "issuer",
    "OAUTH2_PROXY_OIDC_ISSUER_URL": "issuer",
    "JWKS_URL": "jwks",
    "MCP_SERVER_URL": "resource",
}


def client_settings(pod):
    """(what, URL) pairs the pod's other containers are configured with."""
    found = set()
    for c in pod.get("containers") or []:
        for a in c.get("args") or []:
            flag, _, value = a.partition("=")
            if flag in WORKLOAD_SETTINGS and value:
                found.add((WORKLOAD_SETTINGS[flag], value))
        for e in c.get("env") or []:
            if e.get("name") in WORKLOAD_SETTINGS and "value" in e:
                found.add((WORKLOAD_SETTINGS[e["name"]], e["value"]))
    return found


# oauth2-proxy's issuer settings: it fetches <issuer>/.well-known/openid-configuration (go-oidc),
# from the issuer's own host, unless discovery is skipped.
OAUTH2_PROXY_ISSUER = ("--oidc-issuer-url", "OAUTH2_PROXY_OIDC_ISSUER_URL")


def proxy_discovery_urls(pod):
    """Discovery URLs the pod's oauth2-proxy containers will fetch."""
    urls = set()
    for c in pod.get("containers") or []:
        args = c.get("args") or []
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        if "--skip-oidc-discovery" in args or "--skip-oidc-discovery=true" in args \
                or str(env.get("OAUTH2_PROXY_SKIP_OIDC_DISCOVERY", "")).lower() == "true":
            continue
        issuers = [a.partition("=")[2] for a in args if a.partition("=")[0] == OAUTH2_PROXY_ISSUER[0]]
        issuers += [env[OAUTH2_PROXY_ISSUER[1]]] if env.get(OAUTH2_PROXY_ISSUER[1]) else []
        urls |= {i.rstrip("/") + "/.well-known/openid-configuration" for i in issuers if i}
    return urls


def gate_fetches(dry_run_stdout, argv, env):
    """Discovery URLs the gate will fetch by the same route as a plain client, per its --dry-run
    ('issuer X' followed by '  metadata Y'); none when it connects elsewhere (--connect-to)."""
    if any(a == "--connect-to" or a.startswith("--connect-to=") for a in argv) or env.get("WAIT_FOR_IDP_CONNECT_TO"):
        return set()
    return {line.split(None, 1)[1].strip() for line in dry_run_stdout.splitlines()
            if line.startswith("  metadata ") and len(line.split(None, 1)) == 2}


# A values file whose extraInitContainers holds a template. Were it rendered, the gate would get
# the issuer and pass; the real chart leaves it alone, and so must the stand-in.
TEMPLATED_VALUES = """\
x: https://sso.example.com/realms/main
extraEnv: &oidc-env
  - name: OAUTH2_PROXY_OIDC_ISSUER_URL
    value: "{{ .Values.x }}"
extraInitContainers:
  - name: wait-for-idp
    image: YOUR_REGISTRY/wait-for-idp:0.1.0@sha256:YOUR_DIGEST
    env: *oidc-env
"""


def templated_values(args):
    """Check 5: a template in extraInitContainers stays literal, and the gate refuses it."""
    literal, issuer = "{{ .Values.x }}", "https://sso.example.com/realms/main"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(TEMPLATED_VALUES)
        tmp = f.name
    out = subprocess.run([args.helm, "template", "t", str(ROOT / "tests" / "deploy" / "chart"), "-f", tmp],
                         capture_output=True, text=True)
    os.unlink(tmp)
    pod = {}
    if out.returncode == 0:
        pod = next((pod_spec(d) for d in yaml.safe_load_all(out.stdout) if d and pod_spec(d)), None) or {}
    gate = next((c for c in pod.get("initContainers") or [] if c.get("name") == "wait-for-idp"), {})
    proxy = next(iter(pod.get("containers") or []), {})

    def env_value(container):
        return next((e.get("value") for e in container.get("env") or []
                     if e.get("name") == "OAUTH2_PROXY_OIDC_ISSUER_URL"), None)

    where = "helm values with {{ .Values.x }} in extraInitContainers"
    check(f"{where}: reaches the init container as literal text (not rendered)", env_value(gate) == literal,
          f"init container env value {env_value(gate)!r}, expected {literal!r}" + (
              f"; helm: {out.stderr.strip()}" if out.returncode else ""))
    check(f"{where}: extraEnv is rendered for the proxy (as the real chart)", env_value(proxy) == issuer,
          f"proxy env value {env_value(proxy)!r}, expected {issuer!r}")
    if not gate:
        check(f"{where}: the gate's --dry-run exits 2", False, "no wait-for-idp init container rendered")
        return
    argv, env, _ = gate_invocation(gate, {}, args.ca, args.token)
    run = subprocess.run([args.bin, *argv, "--dry-run"], env=env, capture_output=True, text=True)
    check(f"{where}: the gate's --dry-run exits 2", run.returncode == 2,
          f"exit {run.returncode}: " + (run.stdout + run.stderr).strip())


RECIPES = ROOT / "docs" / "deploy.md"
# Lists that a strategic merge patch merges by `name` (their patchMergeKey); any other list is replaced.
MERGED_BY_NAME = {"containers", "initContainers", "ephemeralContainers", "env", "volumes", "volumeMounts"}


def kubectl_run_recipe():
    """The `kubectl run` recipe among docs/deploy.md's recipes, as argv (continuations joined)."""
    text = RECIPES.read_text()
    recipes = text[text.index("<!-- recipes"):text.index("<!-- end of recipes -->")]
    start = recipes.index("```sh\nkubectl run ") + len("```sh\n")
    block = recipes[start:recipes.index("\n```", start)]
    return shlex.split(block.replace("\\\n", " "))


def patched(target, patch, strategic):
    """`patch` applied to `target`: a JSON merge patch (RFC 7386), or a strategic merge patch, which
    differs in merging the lists of MERGED_BY_NAME by their items' `name`."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif strategic and key in MERGED_BY_NAME and isinstance(value, list) and isinstance(out.get(key), list):
            items = {item["name"]: item for item in out[key]}
            for item in value:
                items[item["name"]] = patched(items.get(item["name"], {}), item, strategic)
            out[key] = list(items.values())
        else:
            out[key] = patched(out.get(key), value, strategic)
    return out


def kubectl_run_pod(argv):
    """The Pod that `kubectl run` creates for argv: its generated Pod (labels run=NAME, one
    container named NAME with the image and the arguments after `--`, stdin with -i) with
    --overrides applied as --override-type says (kubectl's default: merge)."""
    assert argv[:2] == ["kubectl", "run"], argv
    name, rest = argv[2], argv[3:]
    options, args = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    opts = dict(o[2:].split("=", 1) for o in options if o.startswith("--") and "=" in o)
    container = {"name": name, "image": opts.get("image"), "args": args}
    if "-i" in options or "--stdin" in options:
        container.update(stdin=True, stdinOnce=True)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"run": name}},
           "spec": {"containers": [container], "restartPolicy": opts.get("restart", "Always")}}
    if "overrides" in opts:
        pod = patched(pod, json.loads(opts["overrides"]), opts.get("override-type", "merge") == "strategic")
    return pod


def kubectl_run_recipe_check(args):
    """Check 6: the pod of the `kubectl run` recipe."""
    where = "docs/deploy.md kubectl run recipe"
    try:
        argv = kubectl_run_recipe()
        pod = kubectl_run_pod(argv)
    except (ValueError, KeyError, AssertionError) as e:
        check(f"{where}: found and parsed", False, repr(e))
        return
    validate_schema(where, [pod], args.versions)
    gates = [c for c in pod["spec"].get("containers") or [] if "wait-for-idp" in (c.get("image") or "")]
    recipe_args = argv[argv.index("--") + 1:] if "--" in argv else []
    check(f"{where}: the overrides keep the gate's image and arguments",
          len(gates) == 1 and gates[0].get("args") == recipe_args and recipe_args,
          f"containers after --overrides: {pod['spec'].get('containers')}")
    for c in gates:
        problems = restricted_problems(pod["spec"], c, operational=False)
        check(f"{where}: Pod Security restricted", not problems, "missing: " + ", ".join(problems))
        run = subprocess.run([args.bin, *dry_run(c["args"])], capture_output=True, text=True,
                             env={"PATH": os.environ.get("PATH", "")})
        check(f"{where}: the binary accepts its arguments", run.returncode == 0,
              (run.stdout + run.stderr).strip())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--kubectl", required=True)
    parser.add_argument("--helm", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--token", required=True, help="a file with a dummy bearer token")
    parser.add_argument("-k", dest="versions", action="append", required=True)
    args = parser.parse_args()

    gates = sidecars = 0
    for source, docs in rendered(args):
        docs = [d for d in docs if d]
        validate_schema(source, docs, schema_versions(docs, args.versions))
        configmaps = {d["metadata"]["name"]: d.get("data") or {} for d in docs if d.get("kind") == "ConfigMap"}
        for doc in docs:
            pod = pod_spec(doc)
            if pod is None:
                continue
            containers = (pod.get("initContainers") or []) + (pod.get("containers") or [])
            for c in containers:
                where = f"{source}: {doc['kind']}/{doc['metadata']['name']} container {c['name']}"
                problems = restricted_problems(pod, c)
                check(f"{where}: Pod Security restricted", not problems, "missing: " + ", ".join(problems))
                if "wait-for-idp" not in c.get("image", ""):
                    continue
                gates += 1
                argv, env, err = gate_invocation(c, configmaps, args.ca, args.token)
                if err:
                    check(f"{where}: settings resolve", False, err)
                    continue
                out = subprocess.run([args.bin, *dry_run(argv)], env=env, capture_output=True, text=True)
                check(f"{where}: the binary accepts its flags and variables", out.returncode == 0,
                      (out.stdout + out.stderr).strip())
                if c.get("restartPolicy") == "Always":
                    sidecars += 1
                    sidecar_check(where, c, out.stdout)
                gate_settings = {(line.split(None, 1)[0], line.split(None, 2)[1]) for line in out.stdout.splitlines()
                                 if line.split(None, 1)[0] in ("issuer", "jwks", "resource")}
                clients = client_settings(pod)
                if clients:
                    check(f"{where}: waits for what its workload uses", clients <= gate_settings,
                          f"workload {sorted(clients)} vs gate {sorted(gate_settings)}")
                proxy_urls = proxy_discovery_urls(pod)
                if proxy_urls:
                    fetched = gate_fetches(out.stdout, argv, env)
                    check(f"{where}: fetches the discovery URL its oauth2-proxy will", proxy_urls <= fetched,
                          f"proxy fetches {sorted(proxy_urls)}, gate fetches {sorted(fetched)} "
                          "(a --discovery-url or --connect-to that the proxy does not share?)")
    check("every rendering contains a wait-for-idp container", gates >= 5, f"found {gates}")
    check("the sidecar recipes render (manifest, kustomize, helm)", sidecars >= 3, f"found {sidecars}")
    podmonitor_check()
    policy_check()
    templated_values(args)
    kubectl_run_recipe_check(args)
    print(f"\ndeploy: {RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
