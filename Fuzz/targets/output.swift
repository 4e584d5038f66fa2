// Fuzz target: the output layer driven by what a peer sends. The input is advertising data
// (and, when it parses, an HCI event). Invariants: nothing traps; the writer describing a
// value straight and the writer rendering its field tree give the same bytes, in text and
// in JSON; JSON output is valid UTF-8 with no raw control character (C0, DEL, C1); the
// allocation-free ADSummary agrees with walking the structures (distinct service UUIDs,
// first name, malformed flag).

func render(_ format: FieldWriter.Format, _ body: (inout FieldWriter) -> Void) -> [UInt8] {
    var w = FieldWriter(format: format, out: OutputBuffer(capacity: 64))
    w.beginRecord()
    body(&w)
    w.endRecord()
    return w.out.withBytes { Array($0) }
}

func checkJSON(_ bytes: [UInt8]) {
    if let problem = bytes.withUnsafeBytes({ OutputBuffer.jsonOutputViolation($0, lines: false) }) { preconditionFailure(problem) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    let ad = AdvertisingData(buf)
    for format in [FieldWriter.Format.text, .json] {
        let direct = render(format) { ad.describe(into: &$0) }
        let viaTree = render(format) { $0.fields(ad.fields) }
        precondition(direct == viaTree, "writer and field tree disagree on advertising data")
        if format == .json { checkJSON(direct) }
    }

    // ADSummary against a walk of the structures (advertising data only, no scan response).
    let summary = ADSummary(buf, UnsafeRawBufferPointer(start: nil, count: 0))
    var expected: [BluetoothUUID] = []
    var malformed = false
    var it = ad.makeIterator()
    while true {
        do throws(WireError) {
            guard let s = try it.next() else { break }
            if (0x02 ... 0x07).contains(s.type.rawValue) {
                if let list = try? s.serviceUUIDs() {
                    for u in list where !expected.contains(u) { expected.append(u) }
                } else { malformed = true }
            }
        } catch {
            malformed = true
            break
        }
    }
    var got: [BluetoothUUID] = []
    summary.forEachServiceUUID { got.append($0) }
    precondition(got == expected, "ADSummary's service UUIDs differ from the walk")
    precondition(summary.serviceUUIDCount == expected.count)
    if malformed { precondition(summary.malformed, "ADSummary missed a malformed structure") }
    // The TX power alone (a device snapshot's) is the summary's, the bytes as either data set.
    let none = UnsafeRawBufferPointer(start: nil, count: 0)
    precondition(ADSummary.txPower(buf, none) == summary.txPower, "TX power alone differs from the summary's")
    precondition(ADSummary.txPower(none, buf) == ADSummary(none, buf).txPower, "TX power alone differs (scan response)")

    // The same bytes as an HCI event packet (no indicator).
    if let event = try? HCIEvent(parsing: buf) {
        for format in [FieldWriter.Format.text, .json] {
            let direct = render(format) { event.describe(into: &$0) }
            let viaTree = render(format) { $0.fields(event.fields) }
            precondition(direct == viaTree, "writer and field tree disagree on an HCI event")
            if format == .json { checkJSON(direct) }
        }
    }
    return 0
}
