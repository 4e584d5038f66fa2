import BluetoothWire
import CBluetooth
import Glibc

/// One Bluetooth adapter the kernel knows (`hcigatt list`).
public struct AdapterInfo: Sendable, Hashable {
    /// Whether hcigatt could take the adapter with the HCI user channel now.
    public enum UserChannelState: Sendable, Hashable, CustomStringConvertible {
        /// Down and free: `user:hciN` works.
        case free
        /// Up: the kernel's host (bluetoothd) uses it; bring it down first.
        case kernelHost
        /// Another program holds it, or the kernel is still setting it up.
        case busy(String)
        /// Could not be checked (e.g. no CAP_NET_ADMIN).
        case unknown(String)

        public var description: String {
            switch self {
            case .free: "free"
            case .kernelHost: "up (kernel host)"
            case .busy(let why): "busy (\(why))"
            case .unknown(let why): "unknown (\(why))"
            }
        }
    }

    /// The adapter index (N of hciN).
    public var index: UInt16
    /// "hci0".
    public var name: String
    /// Its public address (BD_ADDR).
    public var address: BluetoothAddress
    /// The kernel has it up (HCI_UP): the user channel needs it down.
    public var isUp: Bool
    /// The bus the controller sits on ("USB", "UART", "virtual"...), from hci_dev_info.type.
    public var bus: String
    /// "primary" (BR/EDR/LE) or "AMP".
    public var controllerType: String
    /// Whether `user:hciN` could take it now, and if not why.
    public var userChannel: UserChannelState

    /// An adapter as the kernel describes it.
    public init(index: UInt16, name: String, address: BluetoothAddress, isUp: Bool, bus: String, controllerType: String, userChannel: UserChannelState) {
        self.index = index
        self.name = name
        self.address = address
        self.isUp = isUp
        self.bus = bus
        self.controllerType = controllerType
        self.userChannel = userChannel
    }

    /// Bus names of include/net/bluetooth/hci.h (HCI_VIRTUAL ... HCI_IPC).
    static func busName(_ type: UInt8) -> String {
        switch type & 0x0F {
        case 0: "virtual"
        case 1: "USB"
        case 2: "PC Card"
        case 3: "UART"
        case 4: "RS232"
        case 5: "PCI"
        case 6: "SDIO"
        case 7: "SPI"
        case 8: "I2C"
        case 9: "SMD"
        case 10: "VIRTIO"
        case 11: "IPC"
        case let b: "bus \(b)"
        }
    }

    static func controllerTypeName(_ type: UInt8) -> String {
        switch (type >> 4) & 0x03 {
        case 0: "primary"
        case 1: "AMP"
        case let t: "type \(t)"
        }
    }
}

/// The adapters the kernel knows, from the HCIGETDEVLIST and HCIGETDEVINFO ioctls.
///
/// For an adapter that is down, the user channel is checked by binding it briefly (which
/// makes the kernel open the device for a moment); an adapter that is up is reported as
/// used by the kernel's host without touching it. A kernel without AF_BLUETOOTH gives
/// `.noBluetoothSupport`.
public func listAdapters(system: SystemCalls = .live) throws(TransportError) -> [AdapterInfo] {
    let label = "list"
    let fd: Int32
    switch system.openHCISocket(label: label) {
    case .success(let f): fd = f
    case .failure(let e): throw e
    }
    defer { system.closeOnce(fd) }

    // struct hci_dev_list_req { u16 dev_num; struct hci_dev_req dev_req[]; }
    // with hci_dev_req { u16 dev_id; u32 dev_opt; } (8 bytes, 4-aligned).
    let entrySize = MemoryLayout<hci_dev_req>.stride
    let entriesOffset = max(MemoryLayout<UInt16>.size, MemoryLayout<hci_dev_req>.alignment)
    let max = LinuxBluetooth.maxDevices
    let request = UnsafeMutableRawBufferPointer.allocate(byteCount: entriesOffset + max * entrySize, alignment: 8)
    defer { request.deallocate() }
    request.initializeMemory(as: UInt8.self, repeating: 0)
    request.storeBytes(of: UInt16(max), toByteOffset: 0, as: UInt16.self)
    let listed = system.valueOrErrno {
        system.ioctl(fd, LinuxBluetooth.ioctlGetDeviceList, Int(bitPattern: request.baseAddress))
    }
    if case .failure(let e) = listed {
        throw TransportError(.io, "listing the Bluetooth adapters (HCIGETDEVLIST) failed: \(e)", errno: e.rawValue)
    }
    let count = min(Int(request.load(fromByteOffset: 0, as: UInt16.self)), max)
    var adapters: [AdapterInfo] = []
    for i in 0 ..< count {
        let index = request.load(fromByteOffset: entriesOffset + i * entrySize, as: UInt16.self)
        guard case .success(let di) = system.deviceInfo(fd, index: index) else { continue } // removed meanwhile
        let state: AdapterInfo.UserChannelState = di.isUp ? .kernelHost : probeUserChannel(index: index, system: system)
        adapters.append(AdapterInfo(
            index: index, name: di.name, address: di.address, isUp: di.isUp,
            bus: AdapterInfo.busName(di.type), controllerType: AdapterInfo.controllerTypeName(di.type),
            userChannel: state))
    }
    return adapters.sorted { $0.index < $1.index }
}

/// Binds a user channel socket to `index` and closes it at once.
func probeUserChannel(index: UInt16, system: SystemCalls) -> AdapterInfo.UserChannelState {
    guard case .success(let fd) = system.openHCISocket(label: "list") else { return .unknown("no HCI socket") }
    defer { system.closeOnce(fd) }
    var address = LinuxBluetooth.hciAddress(device: index, channel: LinuxBluetooth.hciChannelUser)
    let size = socklen_t(LinuxBluetooth.sockaddrHCISize)
    let r = withUnsafePointer(to: &address) { p in system.valueOrErrno { system.bind(fd, p, size) } }
    switch r {
    case .success: return .free
    case .failure(let e) where e == .permissionDenied || e == .accessDenied: return .unknown("checking needs CAP_NET_ADMIN")
    case .failure(let e) where e == .tooManyUsers || e == .alreadyInProgress: return .busy("another program's user channel")
    case .failure(let e) where e == .busy: return .busy("the kernel is setting it up or holds it")
    case .failure(let e) where e == .rfkill: return .busy("blocked by rfkill")
    case .failure(let e): return .unknown("\(e)")
    }
}
