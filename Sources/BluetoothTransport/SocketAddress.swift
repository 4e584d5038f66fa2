import CBluetooth
import Glibc

/// Linux Bluetooth socket constants (include/net/bluetooth/*.h), read from the
/// libbluetooth-dev headers at build time.
public enum LinuxBluetooth {
    /// AF_BLUETOOTH.
    public static let addressFamily = Int32(AF_BLUETOOTH)
    /// BTPROTO_HCI.
    public static let protocolHCI = Int32(BTPROTO_HCI)
    /// BTPROTO_L2CAP.
    public static let protocolL2CAP = Int32(BTPROTO_L2CAP)
    /// HCI_CHANNEL_USER: exclusive access to a controller that is down.
    public static let hciChannelUser = UInt16(HCI_CHANNEL_USER)
    /// HCI_CHANNEL_RAW: the controller's traffic beside the kernel's host.
    public static let hciChannelRaw = UInt16(HCI_CHANNEL_RAW)
    /// The fixed L2CAP channel of the Attribute Protocol on LE links.
    public static let attCID: UInt16 = 4

    /// sizeof(struct sockaddr_hci).
    public static var sockaddrHCISize: Int { MemoryLayout<sockaddr_hci>.size }
    /// sizeof(struct sockaddr_l2).
    public static var sockaddrL2Size: Int { MemoryLayout<sockaddr_l2>.size }

    /// A `sockaddr_hci` for binding controller `index` on `channel`.
    public static func hciAddress(device index: UInt16, channel: UInt16) -> sockaddr_hci {
        var a = sockaddr_hci()
        a.hci_family = sa_family_t(AF_BLUETOOTH)
        a.hci_dev = index
        a.hci_channel = channel
        return a
    }
}

extension LinuxBluetooth {
    // ioctl requests on HCI sockets (include/net/bluetooth/hci_sock.h). The _IOW/_IOR
    // encoding is the generic one (x86, ARM, RISC-V): dir << 30 | size << 16 | 'H' << 8 | nr,
    // with size = sizeof(int).
    /// HCIDEVUP: bring an adapter up.
    public static let ioctlDeviceUp: UInt = 0x4004_48C9 // HCIDEVUP, _IOW('H', 201, int)
    /// HCIDEVDOWN: bring an adapter down.
    public static let ioctlDeviceDown: UInt = 0x4004_48CA // HCIDEVDOWN, _IOW('H', 202, int)
    /// HCIGETDEVLIST: the adapters.
    public static let ioctlGetDeviceList: UInt = 0x8004_48D2 // HCIGETDEVLIST, _IOR('H', 210, int)
    /// HCIGETDEVINFO: one adapter's state and address.
    public static let ioctlGetDeviceInfo: UInt = 0x8004_48D3 // HCIGETDEVINFO, _IOR('H', 211, int)

    /// SOL_HCI and the HCI_FILTER socket option.
    public static let solHCI = Int32(SOL_HCI)
    /// HCI_FILTER: which packets and events a raw socket receives.
    public static let hciFilterOption = Int32(HCI_FILTER)
    /// Most adapters the kernel lists (HCI_MAX_DEV).
    public static let maxDevices = Int(HCI_MAX_DEV)
    /// Bit of `hci_dev_info.flags`: the kernel's host has the adapter up.
    public static let flagUp = UInt32(1) << UInt32(HCI_UP)

    /// The filter a raw-channel socket needs to see the controller's traffic:
    /// event and ACL packets, every event code. (The kernel's default for a new raw
    /// socket passes nothing.)
    public static func rawChannelFilter() -> hci_filter {
        var f = hci_filter()
        f.type_mask = (1 << UInt32(HCI_EVENT_PKT)) | (1 << UInt32(HCI_ACLDATA_PKT))
        f.event_mask = (0xFFFF_FFFF, 0xFFFF_FFFF)
        f.opcode = 0
        return f
    }
}
