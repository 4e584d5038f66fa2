import CBluetooth
import Glibc

/// Linux Bluetooth socket constants (include/net/bluetooth/*.h), read from the
/// libbluetooth-dev headers at build time.
public enum LinuxBluetooth {
    public static let addressFamily = Int32(AF_BLUETOOTH)
    public static let protocolHCI = Int32(BTPROTO_HCI)
    public static let protocolL2CAP = Int32(BTPROTO_L2CAP)
    /// HCI_CHANNEL_USER: exclusive access to a controller that is down.
    public static let hciChannelUser = UInt16(HCI_CHANNEL_USER)
    public static let hciChannelRaw = UInt16(HCI_CHANNEL_RAW)
    /// The fixed L2CAP channel of the Attribute Protocol on LE links.
    public static let attCID: UInt16 = 4

    public static var sockaddrHCISize: Int { MemoryLayout<sockaddr_hci>.size }
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
