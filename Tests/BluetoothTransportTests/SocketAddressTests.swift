import Testing
@testable import BluetoothTransport

@Suite struct SocketAddressTests {
    // The kernel checks these sizes in bind(); a wrong struct layout gives EINVAL.
    @Test func structSizesMatchTheKernelABI() {
        #expect(LinuxBluetooth.sockaddrHCISize == 6)
        #expect(LinuxBluetooth.sockaddrL2Size == 14)
        #expect(LinuxBluetooth.addressFamily == 31)
        #expect(LinuxBluetooth.protocolHCI == 1)
        #expect(LinuxBluetooth.protocolL2CAP == 0)
        #expect(LinuxBluetooth.hciChannelUser == 1)
    }

    @Test func hciAddressFields() {
        let a = LinuxBluetooth.hciAddress(device: 3, channel: LinuxBluetooth.hciChannelUser)
        #expect(a.hci_family == 31)
        #expect(a.hci_dev == 3)
        #expect(a.hci_channel == 1)
    }
}
