import CBluetooth
import Glibc
import Testing
@testable import BluetoothTransport

/// True when this kernel has no AF_BLUETOOTH (containers, CI).
let kernelLacksBluetooth: Bool = {
    let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
    if fd >= 0 { close(fd); return false }
    return errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT
}()

let noBluetoothMessage =
    "the kernel has no Bluetooth support (AF_BLUETOOTH): load the bluetooth module (modprobe bluetooth) or use --transport tcp:HOST:PORT"

@Suite struct HCISocketTransportTests {
    @Test(.enabled(if: kernelLacksBluetooth)) func userChannelWithoutKernelSupport() {
        do {
            _ = try openTransport(.userChannel(index: 0))
            Issue.record("opened a user channel without AF_BLUETOOTH")
        } catch {
            #expect(error.kind == .noBluetoothSupport)
            #expect(error.message == noBluetoothMessage)
        }
    }

    @Test(.enabled(if: kernelLacksBluetooth)) func rawChannelWithoutKernelSupport() {
        #expect(throws: TransportError.self) { try RawChannelTransport(index: 0) }
        do { _ = try RawChannelTransport(index: 0) } catch { #expect(error.kind == .noBluetoothSupport) }
    }

    @Test(.enabled(if: kernelLacksBluetooth)) func listAdaptersWithoutKernelSupport() {
        do {
            let adapters = try listAdapters()
            Issue.record("listed \(adapters)")
        } catch {
            #expect(error.kind == .noBluetoothSupport)
            #expect(error.message == noBluetoothMessage)
        }
    }

    @Test func socketEAFNOSUPPORTFromTheShim() {
        let k = FakeKernel()
        k.socketErrno = EAFNOSUPPORT
        do {
            _ = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .noBluetoothSupport)
            #expect(error.message == noBluetoothMessage)
        }
    }

    @Test func bindsTheUserChannelOfTheAdapter() throws {
        let k = FakeKernel()
        let t = try UserChannelTransport(index: 3, options: TransportOptions(system: k.system))
        #expect(k.binds.count == 1)
        #expect(k.binds.first?.dev == 3)
        #expect(k.binds.first?.channel == 1)
        #expect(t.fileDescriptor == 42)
        #expect(t.description == "user:hci3")
        t.close()
        t.close()
        #expect(k.closed == [42])
    }

    @Test func eintrIsRetriedWithoutSleeping() throws {
        let k = FakeKernel()
        k.bindResult = { k in k.binds.count == 1 ? EINTR : nil }
        _ = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
        #expect(k.binds.count == 2)
        #expect(k.sleeps.isEmpty)
    }

    @Test func busyForAWhileThenFree() throws {
        let k = FakeKernel()
        k.bindResult = { k in k.binds.count <= 5 ? EBUSY : nil }
        _ = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
        #expect(k.binds.count == 6)
        #expect(k.sleeps == Array(repeating: 100_000_000, count: 5))
        #expect(k.ioctls.isEmpty) // did not look at the adapter or bring it down
    }

    @Test func busyAndUpWithoutBringDownExplains() {
        let k = FakeKernel()
        k.bindResult = { _ in EBUSY }
        k.deviceFlags = LinuxBluetooth.flagUp
        do {
            _ = try UserChannelTransport(index: 1, options: TransportOptions(system: k.system))
            Issue.record("opened a busy adapter")
        } catch {
            #expect(error.kind == .busy)
            #expect(error.errno == EBUSY)
            #expect(error.message.contains("hci1 is up"))
            #expect(error.message.contains("bluetoothd"))
            #expect(error.message.contains("--bring-down"))
            #expect(error.message.contains("btmgmt --index 1 power off"))
            #expect(error.message.contains("hciconfig hci1 down"))
        }
        // About 3 s of retries every 100 ms, then one look at the adapter; never brought down.
        #expect(k.binds.count == 31)
        #expect(k.sleeps.reduce(0, +) == 3_000_000_000)
        #expect(k.ioctls.map(\.request) == [LinuxBluetooth.ioctlGetDeviceInfo])
        #expect(k.closed == [42])
    }

    @Test func busyAndUpWithBringDownTakesIt() throws {
        let k = FakeKernel()
        k.bindResult = { k in k.deviceIsDown ? nil : EBUSY }
        k.deviceFlags = LinuxBluetooth.flagUp
        let t = try UserChannelTransport(index: 2, options: TransportOptions(bringDown: true, system: k.system))
        #expect(k.ioctls.map(\.request) == [LinuxBluetooth.ioctlGetDeviceInfo, LinuxBluetooth.ioctlDeviceDown])
        #expect(k.ioctls.last?.argument == 2) // HCIDEVDOWN takes the index by value
        #expect(k.binds.count == 32)
        #expect(t.fileDescriptor == 42)
    }

    @Test func bringDownThatDoesNotStickNamesBluetoothd() {
        let k = FakeKernel()
        k.bindResult = { _ in EBUSY }
        k.deviceFlags = LinuxBluetooth.flagUp
        k.deviceDownErrno = nil
        // HCIDEVDOWN "works" but the adapter reports up again (bluetoothd re-powered it).
        var s = k.system
        let inner = s.ioctl
        s.ioctl = { fd, request, argument in
            let r = inner(fd, request, argument)
            k.deviceIsDown = false
            return r
        }
        do {
            _ = try UserChannelTransport(index: 0, options: TransportOptions(bringDown: true, system: s))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .busy)
            #expect(error.message.contains("powered it up again"))
            #expect(error.message.contains("systemctl stop bluetooth"))
        }
        #expect(k.ioctls.filter { $0.request == LinuxBluetooth.ioctlDeviceDown }.count == 1)
    }

    @Test func bringDownWithoutPrivilegesNamesCAP_NET_ADMIN() {
        let k = FakeKernel()
        k.bindResult = { _ in EBUSY }
        k.deviceFlags = LinuxBluetooth.flagUp
        k.deviceDownErrno = EPERM
        do {
            _ = try UserChannelTransport(index: 0, options: TransportOptions(bringDown: true, system: k.system))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .permissionDenied)
            #expect(error.message.contains("CAP_NET_ADMIN"))
        }
    }

    @Test func busyWhileDownSaysTheKernelIsSettingItUp() {
        let k = FakeKernel()
        k.bindResult = { _ in EBUSY }
        k.deviceFlags = 0
        do {
            _ = try UserChannelTransport(index: 0, options: TransportOptions(bringDown: true, system: k.system))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .busy)
            #expect(error.message.contains("although it is down"))
        }
        #expect(!k.ioctls.contains { $0.request == LinuxBluetooth.ioctlDeviceDown })
    }

    @Test(arguments: [EPERM, EACCES]) func permissionNamesCAP_NET_ADMIN(_ e: Int32) {
        let k = FakeKernel()
        k.bindResult = { _ in e }
        do {
            _ = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .permissionDenied)
            #expect(error.message.contains("CAP_NET_ADMIN"))
            #expect(error.message.contains("root"))
            #expect(error.message.contains("setcap cap_net_admin+ep"))
        }
        #expect(k.binds.count == 1)
    }

    @Test func missingAdapterIsNotFound() {
        let k = FakeKernel()
        k.bindResult = { _ in ENODEV }
        do {
            _ = try UserChannelTransport(index: 7, options: TransportOptions(system: k.system))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.message.contains("no adapter hci7 (hcigatt list shows the adapters)"))
        }
    }

    @Test func anotherUserChannelHoldsIt() {
        let k = FakeKernel()
        k.bindResult = { _ in EUSERS }
        do {
            _ = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
            Issue.record("opened")
        } catch {
            #expect(error.kind == .busy)
            #expect(error.message.contains("another program"))
        }
    }

    @Test func writeWaitsOnEAGAINThenSendsTheWholePacket() throws {
        let k = FakeKernel()
        let t = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
        k.writeResults = [EAGAIN, EINTR]
        let reset = h("01 03 0c 00")
        try reset.withUnsafeBytes { try t.write($0) }
        #expect(k.writes == [reset])
        #expect(k.polls == 1)
    }

    @Test func writeToAVanishedAdapterIsClosed() throws {
        let k = FakeKernel()
        let t = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
        k.writeResults = [ENODEV]
        do {
            try h("01 03 0c 00").withUnsafeBytes { try t.write($0) }
            Issue.record("wrote")
        } catch let e as TransportError {
            #expect(e.kind == .closed)
        }
    }

    @Test func kernelSocketBufferIsEnlargedAndItsDropsAreCounted() throws {
        let k = FakeKernel()
        let t = try UserChannelTransport(index: 0, options: TransportOptions(system: k.system))
        #expect(k.socketOptions.contains { $0.level == SOL_SOCKET && $0.name == SO_RCVBUFFORCE })
        #expect(!t.holdsUnreadData)  // the kernel drops what overflows: no back-pressure
        k.meminfoDrops = 7
        #expect(t.receiveDrops == 7)
        k.meminfoDrops = nil  // an old kernel without SO_MEMINFO: not known, not 0
        #expect(t.receiveDrops == nil)
        t.close()
    }

    @Test func rawChannelSetsTheFilterOnceAndNeedsTheAdapterUp() throws {
        let k = FakeKernel()
        k.deviceFlags = LinuxBluetooth.flagUp
        var s = k.system
        nonisolated(unsafe) var filters: [hci_filter] = []
        nonisolated(unsafe) var receiveBuffers: [Int32] = []
        s.setsockopt = { _, level, name, value, length in
            if level == SOL_SOCKET {  // the receive buffer, enlarged for bursts
                #expect(name == SO_RCVBUFFORCE)
                receiveBuffers.append(value.load(as: Int32.self))
                return 0
            }
            #expect(level == 0 && name == 2 && Int(length) == MemoryLayout<hci_filter>.size)
            filters.append(value.load(as: hci_filter.self))
            return 0
        }
        let t = try RawChannelTransport(index: 0, options: TransportOptions(system: s))
        #expect(k.binds.first?.channel == 0)
        #expect(filters.count == 1)
        #expect(receiveBuffers == [4 << 20])
        #expect(filters.first?.type_mask == (1 << 4 | 1 << 2))
        #expect(filters.first?.event_mask.0 == 0xFFFF_FFFF && filters.first?.event_mask.1 == 0xFFFF_FFFF)
        t.close()

        k.deviceFlags = 0
        do {
            _ = try RawChannelTransport(index: 0, options: TransportOptions(system: s))
            Issue.record("opened a raw channel on a down adapter")
        } catch {
            #expect(error.kind == .adapterDown)
            #expect(error.message.contains("btmgmt --index 0 power on"))
        }
    }

    @Test func listAdaptersFromTheIoctls() throws {
        let k = FakeKernel()
        var s = k.system
        s.ioctl = { _, request, argument in
            guard let p = UnsafeMutableRawPointer(bitPattern: argument) else { return -1 }
            switch request {
            case LinuxBluetooth.ioctlGetDeviceList:
                #expect(p.load(as: UInt16.self) == 16)
                p.storeBytes(of: UInt16(2), as: UInt16.self)
                p.storeBytes(of: UInt16(1), toByteOffset: 4, as: UInt16.self)
                p.storeBytes(of: UInt16(0), toByteOffset: 12, as: UInt16.self)
                return 0
            case LinuxBluetooth.ioctlGetDeviceInfo:
                let info = p.assumingMemoryBound(to: hci_dev_info.self)
                let index = info.pointee.dev_id
                withUnsafeMutableBytes(of: &info.pointee.name) { n in
                    for (i, c) in "hci\(index)".utf8.enumerated() { n[i] = c }
                }
                withUnsafeMutableBytes(of: &info.pointee.bdaddr) { b in
                    for i in 0 ..< 6 { b[i] = UInt8(i + 1) } // wire order: 01 02 ... 06
                }
                info.pointee.flags = index == 0 ? LinuxBluetooth.flagUp : 0
                info.pointee.type = index == 0 ? 0x01 : 0x00 // USB primary / virtual primary
                return 0
            default:
                return -1
            }
        }
        let adapters = try listAdapters(system: s)
        #expect(adapters.map(\.name) == ["hci0", "hci1"])
        #expect(adapters.map(\.index) == [0, 1])
        #expect(adapters[0].address.description == "06:05:04:03:02:01")
        #expect(adapters[0].isUp && !adapters[1].isUp)
        #expect(adapters[0].bus == "USB" && adapters[1].bus == "virtual")
        #expect(adapters[0].controllerType == "primary")
        #expect(adapters[0].userChannel == .kernelHost)
        #expect(adapters[0].userChannel.description == "up (kernel host)")
        #expect(adapters[1].userChannel == .free)
        // Only the down adapter was probed, on the user channel.
        #expect(k.binds.map(\.dev) == [1])
        #expect(k.binds.map(\.channel) == [1])
    }
}
