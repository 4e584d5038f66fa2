// Fuzz target: HCI command parsing and encoding.
// If the input parses, re-encoding must give the same bytes (legacy advertising data
// may carry non-zero padding, which encoding zeroes: then it must re-parse equal),
// and the typed struct's own parser must agree with the enum.
// Built together with the BluetoothWire sources as one module by Fuzz/run.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let parsed: HCICommand
    do throws(WireError) { parsed = try HCICommand(parsing: input) } catch { return 0 }
    _ = parsed.fields
    _ = parsed.fieldTitle
    let bytes: [UInt8]
    do throws(WireError) { bytes = try parsed.encoded() } catch {
        preconditionFailure("a parsed command must encode: \(error)")
    }
    precondition(bytes.count == parsed.encodedLength)
    if !bytes.elementsEqual(input) {
        switch parsed {
        case .leSetAdvertisingData, .leSetScanResponseData:
            precondition(bytes.count == input.count && bytes.prefix(4 + Int(bytes[3])).elementsEqual(input.prefix(4 + Int(bytes[3]))))
        default:
            preconditionFailure("re-encoded bytes differ")
        }
    }
    let again = bytes.withUnsafeBytes { b in Result { () throws(WireError) in try HCICommand(parsing: b) } }
    guard case .success(let back) = again, back == parsed else { preconditionFailure("re-parse differs") }
    // The H4 form parses back to the same packet.
    let h4: [UInt8]
    do throws(WireError) { h4 = try parsed.encodedH4() } catch { preconditionFailure("H4 form does not encode") }
    let frame = h4.withUnsafeBytes { b in
        Result { () throws(WireError) in
            let f = try H4Frame.parse(b)
            return (f.type, Array(f.packet))
        }
    }
    guard case .success(let (type, packet)) = frame, type == .command, packet == bytes else {
        preconditionFailure("H4 form does not parse back")
    }
    return 0
}
