# Sourced by the image scripts: podman and buildah with the project's own configuration and a
# storage that persists between runs (the base image's layers are the slow part to rebuild),
# without touching /etc/containers. Settings this kind of machine needs (docs/image.md):
# runc (crun fails on hybrid cgroups), the overlay driver (vfs copies every layer whole), and
# explicit ulimits.
SVC_IMAGE_CACHE=${SVC_IMAGE_CACHE:-/var/cache/svc/image}
mkdir -p "$SVC_IMAGE_CACHE/storage" "$SVC_IMAGE_CACHE/run" "$SVC_IMAGE_CACHE/tmp"
cat >"$SVC_IMAGE_CACHE/storage.conf" <<CONF
[storage]
driver = "overlay"
runroot = "$SVC_IMAGE_CACHE/run"
graphroot = "$SVC_IMAGE_CACHE/storage"
CONF
cat >"$SVC_IMAGE_CACHE/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$SVC_IMAGE_CACHE/tmp"
CONF
export CONTAINERS_STORAGE_CONF="$SVC_IMAGE_CACHE/storage.conf"
export CONTAINERS_CONF="$SVC_IMAGE_CACHE/containers.conf"
export TMPDIR="$SVC_IMAGE_CACHE/tmp"
