// Socket structures and constants of the Linux Bluetooth subsystem.
// Only types, macros and inline helpers are used; libbluetooth.so is never linked.
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/l2cap.h>
