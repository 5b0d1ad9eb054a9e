#!/usr/bin/env python3
"""Checks of rendered Kubernetes manifests, run by scripts/check-deploy.

    deploy_manifests.py validate  K8S_VERSION RENDERED.yaml...
        Every document against its schema: built-in kinds with kubernetes-validate (strict: unknown
        fields are errors), KEDA kinds against the JSON schema of cloudcoil-models-keda's models
        (generated from KEDA's CRDs), made strict the same way. A kind with no schema is an error,
        never a warning.

    deploy_manifests.py replicas  RENDERED.yaml...
        No worker may run more instances than its topics have partitions: every StatefulSet's
        replicas and every ScaledObject's min/maxReplicaCount must be at most the --partitions of
        the rendering's topic Job (and min <= max).

    deploy_manifests.py image  RUN-PREFIX IMAGE INSPECT.json COMPOSE.yaml PROMETHEUS.yml RENDERED.yaml...
        compose.yaml, prometheus.yml and the renderings agree with the image as built (INSPECT.json
        is `podman image inspect IMAGE`; RUN-PREFIX, a shell-quoted `podman ... run --rm`, runs
        commands in it): the image has no entrypoint, and every command that compose `command:` or
        a container's `args:` starts with is on the image's PATH, with every option it passes;
        pods run as the image's user (non-root) with a read-only root filesystem; the exposed port
        is FLEET_HTTP_PORT, the containerPort, the probes', Service's, scrape annotations' and
        Prometheus targets' port and the one compose's health check asks; every FLEET_ variable
        set is one the workers read (their --help lists them); every path in a variable is under
        a volume mounted in that container.

Exits 1 and says what is wrong on any problem.
"""
import json
import sys

import yaml

KEDA_GROUP = "keda.sh/"


def documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def strict(schema):
    """Rejects properties a schema does not name, as kubernetes-validate --strict does.

    Pydantic's schemas allow extra properties (its models ignore them); an object schema that
    lists properties and says nothing about additional ones gets additionalProperties: false.
    """
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def keda_schemas():
    from cloudcoil.models.keda import v1alpha1

    return {
        kind: strict(getattr(v1alpha1, kind).model_json_schema(by_alias=True, mode="validation"))
        for kind in ("ScaledObject", "ScaledJob", "TriggerAuthentication", "ClusterTriggerAuthentication")
    }


def validate(version, paths):
    import jsonschema
    import kubernetes_validate

    keda = keda_schemas()
    problems = 0
    for path in paths:
        for doc in documents(path):
            name = f"{path}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            if doc.get("apiVersion", "").startswith(KEDA_GROUP):
                schema = keda.get(doc["kind"])
                if schema is None:
                    print(f"{name}: no KEDA schema for this kind")
                    problems += 1
                    continue
                errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
                for error in errors:
                    print(f"{name}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
                problems += len(errors)
                continue
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                print(f"{name}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
                problems += 1
            except kubernetes_validate.SchemaNotFoundError as error:
                print(f"{name}: {error}")
                problems += 1
    return problems


def partitions_of(docs, path):
    for doc in docs:
        if doc["kind"] != "Job":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            args = container.get("command", []) + container.get("args", [])
            if "topics" in args and "create" in args and "--partitions" in args:
                return int(args[args.index("--partitions") + 1])
    raise SystemExit(f"{path}: no Job runs `fleetctl topics create --partitions N`")


def replicas(paths):
    problems = 0
    for path in paths:
        docs = documents(path)
        partitions = partitions_of(docs, path)
        counted = 0
        for doc in docs:
            name = f"{path}: {doc['kind']}/{doc['metadata']['name']}"
            if doc["kind"] == "StatefulSet":
                counted += 1
                value = doc["spec"].get("replicas", 1)
                if value > partitions:
                    print(f"{name}: replicas {value} > {partitions} partitions")
                    problems += 1
            elif doc["kind"] == "ScaledObject":
                counted += 1
                low = doc["spec"].get("minReplicaCount", 0)
                high = doc["spec"].get("maxReplicaCount", 100)  # KEDA's default maximum
                if high > partitions:
                    print(f"{name}: maxReplicaCount {high} > {partitions} partitions")
                    problems += 1
                if low > high:
                    print(f"{name}: minReplicaCount {low} > maxReplicaCount {high}")
                    problems += 1
        if counted == 0:
            print(f"{path}: no StatefulSet or ScaledObject to check")
            problems += 1
        print(f"{path}: {partitions} partitions; {counted} replica settings checked")
    return problems


def compose_default(value):
    """The value a compose environment entry takes when its variable is unset: `${NAME-x}` and
    `${NAME:-x}` give x, `${NAME}` nothing, anything else itself."""
    import re

    m = re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-(.*))?\}", str(value), re.S)
    return (m.group(1) or "") if m else str(value)


def under_mount(path, volumes):
    """Whether `path` lies in one of a compose service's volume targets (short or long syntax)."""
    import re

    targets = []
    for volume in volumes:
        if isinstance(volume, dict):
            targets.append(str(volume.get("target", "")))
        else:
            # SOURCE:TARGET[:MODE]; a source may be an interpolation holding ":" (`${X:-./d}`).
            parts = re.sub(r"\$\{[^}]*\}", "source", str(volume)).split(":")
            targets.append(parts[1] if len(parts) > 1 else parts[0])
    return any(t.startswith("/") and (path == t or path.startswith(t.rstrip("/") + "/")) for t in targets)


def image_agreement(prefix, image, inspect_path, compose_path, prometheus_path, paths):
    import re
    import shlex
    import subprocess

    run_prefix = shlex.split(prefix)
    config = json.load(open(inspect_path))[0]["Config"]
    problems = []

    def run(argv, entrypoint=None):
        command = run_prefix + ["--entrypoint", entrypoint or argv[0], image] + argv[1:]
        return subprocess.run(command, capture_output=True, text=True)

    # The image's contract.
    user = config.get("User") or ""
    m = re.fullmatch(r"(\d+):(\d+)", user)
    if not m or m.group(1) == "0":
        problems.append(f"image user {user!r} is not a numeric non-root uid:gid")
        uid = gid = None
    else:
        uid, gid = int(m.group(1)), int(m.group(2))
    if config.get("Entrypoint"):
        problems.append(f"image has an entrypoint {config['Entrypoint']}: compose `command:` and Kubernetes `args:` name the executable")
    exposed = sorted(int(p.split("/")[0]) for p in (config.get("ExposedPorts") or {}) if p.endswith("/tcp"))
    if len(exposed) != 1:
        problems.append(f"image exposes {exposed or 'no'} TCP ports; the workers serve one (FLEET_HTTP_PORT)")
    port = exposed[0] if exposed else None
    path_dirs = next((e.split("=", 1)[1] for e in config.get("Env") or [] if e.startswith("PATH=")), "/usr/bin:/bin").split(":")
    listing = run(["bash", "-c", 'IFS=:; for d in $0; do ls -1 "$d" 2>/dev/null; done', ":".join(path_dirs)])
    if listing.returncode != 0:
        raise SystemExit(f"cannot list the image's PATH: {listing.stderr}")
    commands = set(listing.stdout.split())
    worker_help = run(["delivery-worker", "--help"])
    read = set(re.findall(r"\b(FLEET_[A-Z_]+\b|KAFKA_\*|POD_NAME\b)", worker_help.stdout))
    if worker_help.returncode != 0 or not read:
        raise SystemExit(f"cannot read the workers' variables from `delivery-worker --help`: {worker_help.stderr}")
    helps = {}

    def check_command(where, argv):
        if not argv:
            problems.append(f"{where}: no command (the image's CMD would run)")
            return
        if argv[0] not in commands:
            problems.append(f"{where}: {argv[0]!r} is not on the image's PATH ({':'.join(path_dirs)})")
            return
        words = []
        for word in argv[1:]:
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            words.append(word)
        key = tuple([argv[0]] + words)
        if key not in helps:
            helps[key] = run(list(key) + ["--help"])
        help = helps[key]
        if help.returncode != 0 or not re.search(r"^USAGE: %s( |$)" % re.escape(" ".join(key)), help.stdout, re.M):
            problems.append(f"{where}: `{' '.join(key)}` is not a command of the image")
            return
        for word in argv[1:]:
            if word.startswith("--") and not re.search(r"(^|[\s\[])%s([\s\]=]|$)" % re.escape(word.split("=")[0]), help.stdout, re.M):
                problems.append(f"{where}: `{' '.join(key)}` has no option {word.split('=')[0]}")

    def check_variable(where, name, value):
        if name.startswith("FLEET_") and name not in read:
            problems.append(f"{where}: {name} is not a variable the workers read")
        elif name.startswith("KAFKA_") and "KAFKA_*" not in read:
            problems.append(f"{where}: the workers read no KAFKA_* variables")
        if name == "FLEET_HTTP_PORT" and port is not None and str(value) != str(port):
            problems.append(f"{where}: FLEET_HTTP_PORT={value}, the image exposes {port}")

    # Compose: every service of the fleet's image.
    compose = yaml.safe_load(open(compose_path))
    for service, spec in compose.get("services", {}).items():
        if "retention-fleet" not in str(spec.get("image", "")):
            continue
        where = f"{compose_path}: {service}"
        check_command(where, spec.get("command") or config.get("Cmd") or [])
        if "user" in spec and uid is not None and str(spec["user"]) not in (str(uid), f"{uid}:{gid}"):
            problems.append(f"{where}: user {spec['user']}, the image's is {uid}:{gid}")
        env = spec.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        for name, value in env.items():
            check_variable(where, name, value)
            path = compose_default(value)
            if path.startswith("/") and not under_mount(path, spec.get("volumes") or []):
                problems.append(f"{where}: {name}={path}: compose mounts nothing there")
        test = (spec.get("healthcheck") or {}).get("test")
        if test is not None and port is not None and f"/dev/tcp/127.0.0.1/{port}" not in " ".join(test):
            problems.append(f"{where}: the health check does not ask port {port}")
        if test is not None and test[0] == "CMD" and test[1] not in commands:
            problems.append(f"{where}: the health check runs {test[1]!r}, which the image does not have")
    for job in yaml.safe_load(open(prometheus_path)).get("scrape_configs", []):
        for static in job.get("static_configs", []):
            for target in static.get("targets", []):
                if port is not None and not target.endswith(f":{port}"):
                    problems.append(f"{prometheus_path}: target {target} is not on port {port}")

    # Kubernetes: every pod template of the fleet's image, in every rendering.
    for path in paths:
        docs = documents(path)
        config_maps = {d["metadata"]["name"]: d.get("data") or {} for d in docs if d["kind"] == "ConfigMap"}
        secrets = {d["metadata"]["name"]: {**(d.get("data") or {}), **(d.get("stringData") or {})}
                   for d in docs if d["kind"] == "Secret"}
        services = [d for d in docs if d["kind"] == "Service"]
        for doc in docs:
            template = (doc.get("spec") or {}).get("template")
            if doc["kind"] not in ("StatefulSet", "Deployment", "Job", "DaemonSet") or not template:
                continue
            pod = template["spec"]
            pod_security = pod.get("securityContext") or {}
            for container in pod["containers"]:
                if "retention-fleet" not in container.get("image", ""):
                    continue
                where = f"{path}: {doc['kind']}/{doc['metadata']['name']}/{container['name']}"
                security = {**pod_security, **(container.get("securityContext") or {})}
                if uid is not None and (security.get("runAsUser"), security.get("runAsGroup")) != (uid, gid):
                    problems.append(f"{where}: runs as {security.get('runAsUser')}:{security.get('runAsGroup')}, the image's user is {uid}:{gid}")
                if security.get("runAsNonRoot") is not True:
                    problems.append(f"{where}: runAsNonRoot is not true")
                if security.get("readOnlyRootFilesystem") is not True:
                    problems.append(f"{where}: readOnlyRootFilesystem is not true (the image runs on one)")
                if "command" in container:
                    problems.append(f"{where}: `command:` replaces the image's entrypoint; name the executable in `args:`")
                check_command(where, container.get("args") or config.get("Cmd") or [])
                mounts = [m["mountPath"].rstrip("/") + "/" for m in container.get("volumeMounts", [])]
                env = [(e["name"], e.get("value", "")) for e in container.get("env", [])]
                for source in container.get("envFrom", []):
                    if "configMapRef" in source:
                        env += list(config_maps.get(source["configMapRef"]["name"], {}).items())
                    if "secretRef" in source:
                        env += [(k, "") for k in secrets.get(source["secretRef"]["name"], {})]
                for name, value in env:
                    check_variable(where, name, value)
                    if str(value).startswith("/") and not any(str(value).startswith(m) for m in mounts):
                        problems.append(f"{where}: {name}={value} is under no volume mounted in the container")
                ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
                if port is not None and doc["kind"] != "Job" and list(ports.values()) != [port]:
                    problems.append(f"{where}: containerPorts {list(ports.values())}, the image exposes {port}")
                for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                    get = (container.get(probe) or {}).get("httpGet")
                    if get and ports.get(get["port"], get["port"]) != port:
                        problems.append(f"{where}: {probe} asks port {get['port']} ({ports.get(get['port'], get['port'])}), the image exposes {port}")
                annotation = (template["metadata"].get("annotations") or {}).get("prometheus.io/port")
                if annotation is not None and str(annotation) != str(port):
                    problems.append(f"{where}: prometheus.io/port {annotation}, the image exposes {port}")
                labels = template["metadata"].get("labels") or {}
                for service in services:
                    selector = service["spec"].get("selector") or {}
                    if selector and all(labels.get(k) == v for k, v in selector.items()):
                        for p in service["spec"].get("ports", []):
                            target = p.get("targetPort", p["port"])
                            if ports.get(target, target) != port:
                                problems.append(f"{path}: Service/{service['metadata']['name']} targets port {target}, the image exposes {port}")
    for p in problems:
        print(p)
    if not problems:
        print(f"{image}: user {user}, no entrypoint, port {port}, {len(helps)} command lines checked, "
              f"{len(read)} variables the workers read; compose.yaml, prometheus.yml and {len(paths)} renderings agree")
    return len(problems)


def main(argv):
    if len(argv) >= 3 and argv[1] == "validate":
        problems = validate(argv[2], argv[3:])
    elif len(argv) >= 2 and argv[1] == "replicas":
        problems = replicas(argv[2:])
    elif len(argv) >= 7 and argv[1] == "image":
        problems = image_agreement(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7:])
    else:
        print(__doc__)
        return 2
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
