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


def main(argv):
    if len(argv) >= 3 and argv[1] == "validate":
        problems = validate(argv[2], argv[3:])
    elif len(argv) >= 2 and argv[1] == "replicas":
        problems = replicas(argv[2:])
    else:
        print(__doc__)
        return 2
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
