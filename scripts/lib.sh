# Shared by the scripts in this folder (sourced, not run).

# The Swift toolchain lives in /opt/swift on the project's machines; a fresh shell may not have
# it on PATH.
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

as_root() { if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi; }
