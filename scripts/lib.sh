# Shared by the scripts in this folder (sourced, not run).

# The Swift toolchain lives in /opt/swift on the project's machines; a fresh shell may not have
# it on PATH.
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

as_root() { if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi; }

# --- the image (deploy/Dockerfile) and the checks that make or imitate it ---------------------
# Shared by scripts/check-image (podman) and scripts/check-runtime-root (chroot), so that both
# check the image the Dockerfile describes, built from the same release binaries.

# The Debian release of the Dockerfile's runtime stage (RUNTIME_IMAGE=debian:<suite>-slim).
image_runtime_suite() {
    local suite
    suite="$(sed -n 's/^ARG RUNTIME_IMAGE=debian:\([a-z]*\)-slim$/\1/p' deploy/Dockerfile)"
    [[ -n "$suite" ]] || { echo "deploy/Dockerfile's RUNTIME_IMAGE is not a debian:<suite>-slim image" >&2; return 1; }
    echo "$suite"
}

# The image's commands, one a line: fleetctl (the one binary) and the worker names linked to it
# (deploy/Dockerfile's ARG WORKERS).
image_commands() {
    local workers
    workers="$(sed -n 's/^ARG WORKERS="\(.*\)"$/\1/p' deploy/Dockerfile)"
    [[ -n "$workers" ]] || { echo "no ARG WORKERS in deploy/Dockerfile" >&2; return 1; }
    printf '%s\n' fleetctl $workers
}

# The Debian archive this machine's apt uses (its sources.list / deb822 .sources), so that
# debootstrap and the image's apt reach the same mirror: `debian_mirror` for the main archive,
# `debian_mirror security` for the security archive (empty when apt names none).
debian_mirror() {
    python3 - "${1:-main}" <<'PY'
import glob, re, sys
want_security = sys.argv[1] == "security"
found = []
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        for line in open(path):
            m = re.match(r"\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m: found.append((m.group(1), [m.group(2)]))
    except OSError:
        pass
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in open(path).read().split("\n\n"):
        fields = dict(re.findall(r"(?m)^([A-Za-z-]+):\s*(.*)$", stanza))
        if "deb" in fields.get("Types", "").split() and fields.get("Enabled", "yes") != "no":
            for uri in fields.get("URIs", "").split():
                found.append((uri, fields.get("Suites", "").split()))
for uri, suites in found:
    security = any(s.endswith("-security") or "/" in s for s in suites)
    if security == want_security and re.search(r"/debian(-security)?/?$", uri):
        print(uri.rstrip("/"))
        break
else:
    sys.exit(0 if want_security else 1)
PY
}

# debootstrap --variant=minbase (what Debian's slim images hold) of SUITE into DIR from this
# machine's mirror, verified with Debian's archive keyring. Its log goes to LOG.
debootstrap_minbase() { # suite dir log
    local suite="$1" dir="$2" log="$3" mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    mirror="$(debian_mirror)" || { echo "no Debian archive in this machine's apt sources" >&2; return 1; }
    command -v debootstrap >/dev/null || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
    [[ -r "$keyring" ]] || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debian-archive-keyring >&2
    as_root rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    if ! as_root debootstrap --variant=minbase --keyring="$keyring" "$suite" "$dir" "$mirror" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        return 1
    fi
    # debootstrap verifies InRelease against the keyring; say which key signed it.
    grep -m1 'Valid Release signature' "$log" >&2 || { echo "debootstrap did not verify $suite's Release signature" >&2; return 1; }
}

# `swift build` as deploy/Dockerfile's build stages run it (release, static Swift standard
# library), into .build-static: one set of flags, so the image's builds share one build.
image_swift_build() { swift build -c release --static-swift-stdlib --scratch-path .build-static "$@"; }
# The release build of the image's one binary; prints the binaries' folder.
release_build() {
    image_swift_build --product fleetctl -q >&2
    image_swift_build --show-bin-path
}
# The release build of the `dev` image's stand-in providers (provider-fakes), beside fleetctl's.
dev_release_build() { image_swift_build --product provider-fakes -q >&2; }

# What deploy/Dockerfile copies to /usr/local/bin from the build stage: fleetctl and the
# resource bundles next to it (Bundle.module looks for them beside the executable). The worker
# names are links to fleetctl, made by the Dockerfile's runtime stage (and by link_image_commands).
stage_image_binaries() { # bin-dir dest
    rm -rf "$2" && mkdir -p "$2"
    install -m 0755 "$1/fleetctl" "$2/"
    cp -R "$1"/*.resources "$2/"
}
link_image_commands() { # dir (with fleetctl in it)
    local command
    while IFS= read -r command; do
        [[ "$command" == fleetctl ]] || ln -sfn fleetctl "$1/$command"
    done < <(image_commands)
}

# Every `fleetctl` command and option docs/operations.md uses exists in the CLI as built (commands
# marked "pending #7" excepted). Arguments: the command that runs `fleetctl` in the image or root.
check_runbook_options() { # fleetctl-command...
    local line path w help problems=0
    local -A helps=()
    while IFS= read -r line; do
        read -r -a words <<<"${line#*fleetctl }"
        path=()
        for w in "${words[@]:0:2}"; do [[ "$w" =~ ^[a-z]+$ ]] && path+=("$w") || break; done
        [[ -v helps["${path[*]}"] ]] || helps["${path[*]}"]="$("$@" "${path[@]}" --help 2>&1)"
        help="${helps["${path[*]}"]}"
        if ! grep -q "^USAGE: fleetctl ${path[*]}\( \|$\)" <<<"$help"; then
            echo "   runbook: fleetctl ${path[*]}: no such command"; problems=1; continue
        fi
        for w in "${words[@]}"; do
            [[ "$w" == --* ]] || continue
            grep -qE -- "(^|[[:space:][])${w%%=*}([[:space:]]|\]|$)" <<<"$help" \
                || { echo "   runbook: fleetctl ${path[*]} has no ${w%%=*}"; problems=1; }
        done
    done < <(grep -v 'pending #7' docs/operations.md | grep -oE '(^|[ `(])fleetctl [a-z][^`]*' \
        | sed -E 's/^[ `(]//; s/ *#.*//' | sort -u)
    echo "   docs/operations.md: ${#helps[@]} fleetctl commands and their options checked against --help"
    return "$problems"
}

# The demo traffic, sent as scripts/demo sends it: one record at a time, 2 s apart, so the story
# keeps its order through every worker. Arguments: the command that runs `fleetctl` (it gets
# `produce -` and the record on stdin).
send_demo_traffic() { # fleetctl-command...
    local line
    while IFS= read -r line; do
        [[ -z "$line" ]] && continue
        "$@" produce - <<<"$line" >/dev/null || return 1
        sleep 2
    done <samples/demo-traffic.jsonl
}

# Compares `fleetctl decisions` (what the workers decided on the broker) with the decisions
# `fleetctl simulate` finds in the same traffic (the same logic, offline): every simulated
# decision must be a row with the same time, user, outcome, reason and rule, and no other row.
# Prints the table's rows that matched; exits 1 naming what differs.
compare_decisions() { # simulate-output.jsonl decisions-table.txt
    python3 - "$1" "$2" <<'PY'
import json, re, sys
simulated = []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    out = json.loads(line)
    if out.get("topic") == "rin.notify.decisions":
        v = out["value"]
        at = re.sub(r"\.\d+", "", out["at"]).replace("+00:00", "Z")
        simulated.append((at, v["user_id"], v["outcome"], v.get("reason") or "", v["rule"]))
rows = [l.rstrip("\n") for l in open(sys.argv[2])][1:]
rows = [r for r in rows if r.strip()]
problems, used = [], set()
for at, user, outcome, reason, rule in simulated:
    reason_part = re.escape(reason) + r"\s+" if reason else ""
    pattern = re.compile(r"^%s\s+%s\s+\S+\s+%s\s+%s%s(\s|$)" % (
        re.escape(at), re.escape(user), re.escape(outcome), reason_part, re.escape(rule)))
    hit = next((i for i, r in enumerate(rows) if i not in used and pattern.match(r)), None)
    if hit is None:
        problems.append(f"simulated but not decided: {at} {user} {outcome} {reason or '-'} {rule}")
    else:
        used.add(hit)
for i, r in enumerate(rows):
    if i not in used:
        problems.append(f"decided but not simulated: {r}")
if not simulated:
    problems.append("fleetctl simulate found no decisions in the demo traffic")
for p in problems:
    print("   " + p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"{len(simulated)} decisions, each equal to fleetctl simulate's (time, user, outcome, reason, rule)")
PY
}

# podman as scripts/check-image and scripts/check-deploy --image use it: runc (crun fails on
# these machines' cgroups), overlay storage of their own in .image/storage (apart from the
# machine's podman, whose images and names they never touch), cgroupfs, events to a file.
FLEET_IMAGE_STORE="${FLEET_IMAGE_STORE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.image/storage}"
image_podman_argv=(podman --root "$FLEET_IMAGE_STORE/root" --runroot "$FLEET_IMAGE_STORE/run" --storage-driver overlay
                   --runtime runc --cgroup-manager cgroupfs --events-backend file)
image_podman() { "${image_podman_argv[@]}" "$@"; }
