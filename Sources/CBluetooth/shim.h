// Socket structures and constants of the Linux Bluetooth subsystem.
// Only types, macros and inline helpers are used; libbluetooth.so is never linked.
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/l2cap.h>

// ioctl is variadic, which Swift cannot call; this fixed-signature wrapper passes one
// argument (a pointer's bit pattern or an integer such as the device index).
#include <sys/ioctl.h>
static inline int cbluetooth_ioctl(int fd, unsigned long request, long argument) {
    return ioctl(fd, request, argument);
}
