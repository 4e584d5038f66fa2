// Fuzz target: the DER reader of the broker certificate's IP names (CertificateNames), fed
// what a hostile broker sends as its certificate. Checked: it returns or throws, and each
// address it returns is 4 or 16 bytes.
// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    do throws(CertificateNames.Failure) {
        for a in try CertificateNames.ipAddresses(raw) where a.count != 4 && a.count != 16 {
            fatalError("an address of \(a.count) bytes")
        }
    } catch {
        if error.offset < 0 || error.offset > size { fatalError("offset \(error.offset) outside \(size) bytes") }
    }
    return 0
}
