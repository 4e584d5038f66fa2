// Fuzz target: the parsers of the files kept beside bonds (a bond, a bonded client's GATT
// server state, SignCounters, a peer's cached database). They are local files, but a
// corrupt or hand-edited one must give an error, never a trap; what parses renders back
// to the same value.
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothHost BluetoothGATT

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 0:
        if let b = try? BondStore.parse(bytes, path: "f") {
            precondition((try? BondStore.parse(Array(BondStore.render(b).utf8), path: "f")) == b, "a bond renders back")
        }
    case 1:
        if let c = try? GATTBondedClients.parse(bytes, path: "f") {
            precondition((try? GATTBondedClients.parse(Array(GATTBondedClients.render(c).utf8), path: "f")) == c, "client state renders back")
        }
    case 2:
        if let c = try? GATTBondedClients.parseCounters(bytes, path: "f") {
            precondition((try? GATTBondedClients.parseCounters(Array(GATTBondedClients.render(c).utf8), path: "f")) == c, "counters render back")
        }
    default:
        if let c = try? GATTDatabaseCacheFile.parse(bytes, path: "f") {
            precondition((try? GATTDatabaseCacheFile.parse(Array(GATTDatabaseCacheFile.render(c).utf8), path: "f")) == c, "a cache renders back")
        }
    }
    return 0
}
