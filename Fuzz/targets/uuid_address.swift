// Fuzz target: UUID and address parsing from wire bytes and from text.
// Built together with the BluetoothWire sources as one module by Fuzz/run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    do {
        let u = try BluetoothUUID(wire: buf)
        // Round trip in the shortest width must parse back to the same UUID.
        var out = [UInt8](repeating: 0, count: 16)
        let n = try out.withUnsafeMutableBytes { o -> Int in
            var w = ByteWriter(o)
            try u.write(&w)
            return w.count
        }
        let back = try out.withUnsafeBytes { o in try BluetoothUUID(wire: UnsafeRawBufferPointer(rebasing: o[0..<n])) }
        precondition(back == u)
    } catch {}
    let text = String(decoding: buf, as: UTF8.self)
    if let u = BluetoothUUID(text) { precondition(BluetoothUUID(u.uuidString) == u) }
    _ = BluetoothAddress(text)
    _ = Hex.parse(text)
    return 0
}
