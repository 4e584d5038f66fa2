// Fuzz target: the btsnoop record reader.
// Arbitrary input is read as a btsnoop file (any datalink); every record it yields must
// re-encode to exactly the bytes it was read from, so header + records re-encoded equal
// the input up to the reader's offset. Errors must be sticky and must not trap.
// Built together with the BluetoothWire sources as one module by Fuzz/run.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    var reader: BTSnoopReader
    do throws(WireError) {
        reader = try BTSnoopReader(input, expectedDatalink: nil)
    } catch {
        precondition(error.offset <= 16, "header error offset out of range")
        return 0
    }
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 16), alignment: 8)
    defer { out.deallocate() }
    var w = ByteWriter(out)
    do throws(WireError) {
        try BTSnoop.encodeFileHeader(datalink: reader.datalink, into: &w)
    } catch {
        preconditionFailure("header does not re-encode")
    }
    var failure: WireError?
    var count = 0
    while true {
        do throws(WireError) {
            guard let record = try reader.next() else { break }
            precondition(record.offset == w.count, "record offset differs from re-encoded position")
            precondition(record.data.count <= Int(record.originalLength))
            try record.encode(into: &w)
            count += 1
        } catch {
            failure = error
            break
        }
    }
    precondition(w.count == reader.offset, "re-encoded length differs from bytes consumed")
    for i in 0 ..< w.count { precondition(out[i] == input[i], "re-encoded bytes differ") }
    if let failure {
        precondition(failure.offset == reader.offset, "error not at the failing record")
        do throws(WireError) {
            _ = try reader.next()
            preconditionFailure("error not sticky")
        } catch {
            precondition(error == failure)
        }
    } else {
        precondition(reader.offset == size, "reader stopped before the end without an error")
    }
    _ = count
    return 0
}
