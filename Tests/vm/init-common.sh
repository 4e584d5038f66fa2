# Sourced by PID 1 of the VM images (Tests/vm/init, Tests/vm/minimal-init);
# Tests/vm/build-initramfs puts it in every image as /etc/vm-init.sh. Sets up busybox,
# /proc, /sys and /dev, loads the modules listed in /etc/vm-modules, and defines what both
# inits need: die, chroot_mounts and finish. $image (optional) names the image in the log.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
ninep="trans=virtio,version=9p2000.L,msize=262144"

die() {
  echo "vm-init: $*"
  poweroff -f
  sleep 60
}

# chroot_mounts ROOT: what a chroot into the read-only host share needs: /proc, /sys, /dev
# (for /dev/vhci) and an empty ROOT/run/job for the job folder. The job folder goes under
# /run, not /tmp, so the host's /tmp stays visible: the repository may be there.
chroot_mounts() {
  mount -t proc proc "$1/proc"
  mount -t sysfs sysfs "$1/sys"
  mount -t devtmpfs devtmpfs "$1/dev"
  [ -d "$1/run" ] || die "the host root has no /run to mount the job folder under"
  mount -t tmpfs tmpfs "$1/run"
  mkdir -p "$1/run/job"
}

# finish JOBDIR CODE: the job's exit code and the kernel log into the job folder, then
# power off.
finish() {
  echo "vm-init: job exit code $2"
  dmesg > "$1/dmesg"
  echo "$2" > "$1/exit-code"
  sync
  umount "$1"
  poweroff -f
  sleep 60
}

echo "vm-init: kernel $(uname -r) ($(uname -v))${image:+, $image}"
while read -r module; do
  [ -n "$module" ] || continue
  modprobe "$module" || die "modprobe $module failed"
done < /etc/vm-modules
