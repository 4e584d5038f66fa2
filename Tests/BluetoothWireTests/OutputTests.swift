import Testing
@testable import BluetoothWire

@Suite struct ADSummaryTests {
    func summary(_ ad: String, _ sr: String = "", _ body: (ADSummary) -> Void) {
        let a = h(ad), s = h(sr)
        a.withUnsafeBytes { ab in s.withUnsafeBytes { sb in body(ADSummary(ab, sb)) } }
    }

    func uuids(_ s: ADSummary) -> [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        s.forEachServiceUUID { out.append($0) }
        return out
    }

    @Test func firstOccurrenceWinsAndUUIDsAreDistinct() {
        // Flags, shortened name, 16-bit list (180D, 180F, 180D again), manufacturer 004C;
        // scan response: complete name, 16-bit list with 180F and 1809.
        summary("020106 040853686f 0703 0d18 0f18 0d18 05ff4c000102", "05095368 6f72 0503 0f18 0918") { s in
            #expect(s.flags?.rawValue == 0x06)
            #expect(s.name.map { Array($0) } == Array("Shor".utf8))
            #expect(uuids(s) == [BluetoothUUID(0x180D), BluetoothUUID(0x180F), BluetoothUUID(0x1809)])
            #expect(s.serviceUUIDCount == 3)
            #expect(s.manufacturerData?.companyID == 0x004C)
            #expect(!s.malformed)
        }
    }

    /// The TX power alone (what a device snapshot reads) is the summary's: the first
    /// well-formed one of the advertising data, else of the scan response, never past a
    /// layout error.
    @Test(arguments: [
        ("020a04 020af6", ""), ("", "020a07"), ("020a05", "020a07"), ("010a 020a03", ""),
        ("030a0102 020a02", "020a09"), ("05090a", "020a0c"), ("020106", ""), ("", ""),
        ("0400 020a01", "020a0b"), ("02ff 020a03", ""),
    ])
    func txPowerAloneIsTheSummarys(_ ad: String, _ sr: String) {
        let a = h(ad), r = h(sr)
        a.withUnsafeBytes { ab in
            r.withUnsafeBytes { rb in
                #expect(ADSummary.txPower(ab, rb) == ADSummary(ab, rb).txPower)
            }
        }
    }

    @Test func moreThanEightUUIDsAndServiceDataStayApart() {
        // Ten 16-bit UUIDs (one repeated), then service data for FCD2: the slow path walks the
        // data again and must not take the service data UUID for a service.
        var list = "1503"
        for v in [0x1800, 0x1801, 0x1802, 0x1803, 0x1804, 0x1805, 0x1806, 0x1807, 0x1808, 0x1800] {
            list += String(format16(v))
        }
        summary(list + "0516d2fc4002") { s in
            let expected = (0x1800 ... 0x1808).map { BluetoothUUID(UInt16($0)) }
            #expect(uuids(s) == expected)
            #expect(s.serviceUUIDCount == 9)
            var data: [BluetoothUUID] = []
            s.forEachServiceDataUUID { data.append($0) }
            #expect(data == [BluetoothUUID(0xFCD2)])
        }
    }

    @Test func malformedStopsThatBufferOnly() {
        summary("020106 0309", "0303 0918") { s in
            #expect(s.malformed)
            #expect(s.flags?.rawValue == 0x06)
            #expect(uuids(s) == [BluetoothUUID(0x1809)])
        }
    }

    func format16(_ v: Int) -> String {
        let lo = v & 0xFF, hi = v >> 8
        let digits = Array("0123456789abcdef")
        return String([digits[lo >> 4], digits[lo & 15], digits[hi >> 4], digits[hi & 15]])
    }
}

@Suite struct FieldWriterTests {
    func render(_ format: FieldWriter.Format, _ body: (inout FieldWriter) -> Void) -> String {
        var w = FieldWriter(format: format, out: OutputBuffer(capacity: 16))
        body(&w)
        return w.out.string
    }

    @Test func jsonEscapesControlsQuotesAndC1() {
        let out = render(.json) { w in
            w.beginRecord()
            w.text("a", "q\"b\\s\u{7F}\u{85}é\u{1}\n")
            w.endRecord()
        }
        #expect(out == "{\"a\":\"q\\\"b\\\\s\\u007f\\u0085é\\u0001\\n\"}\n")
    }

    @Test func invalidUTF8IsRepairedAsStringsDo() {
        let bytes: [UInt8] = [0x41, 0xC3, 0x28, 0xE2, 0x82]
        let out = render(.json) { w in
            w.beginRecord()
            bytes.withUnsafeBytes { w.text("n", utf8: $0) }
            w.endRecord()
        }
        #expect(out == "{\"n\":\"" + String(decoding: bytes, as: UTF8.self) + "\"}\n")
    }

    @Test func sameOutputAsTheFieldTree() {
        // Every value kind, nested lists and objects: the writer and the tree give one text.
        func describe<S: FieldSink & ~Copyable>(_ s: inout S) {
            s.uint("u", 18_446_744_073_709_551_615)
            s.int("i", -9_223_372_036_854_775_808)
            s.double("d", 0.625)
            s.bool("b", true)
            s.named("n", 0x1234, literal: "Name")
            s.named("m", 0x1234, literal: "Name")   // the cached rendering
            s.bytes("e", [])
            s.bytes("x", [0xDE, 0xAD])
            s.uuid("uuid", BluetoothUUID(high: 0x6E40_0001_B5A3_F393, low: 0xE0A9_E50E_24DC_CA9E))
            s.address("addr", BluetoothAddress(rawValue: 0xC0FF_EE00_0001))
            s.beginList("list", count: 3)
            s.uint("", 1)
            s.beginObject("")
            s.text("k", "v")
            s.beginList("inner", count: 1)
            s.beginList("", count: 2)
            s.uint("", 7)
            s.beginObject("")
            s.bool("z", false)
            s.end()
            s.end()
            s.end()
            s.end()
            s.bytes("", [1])
            s.end()
        }
        var tree = FieldTree()
        describe(&tree)
        for format in [FieldWriter.Format.text, .json] {
            let direct = render(format) { w in
                w.beginRecord()
                describe(&w)
                w.endRecord()
            }
            let viaTree = render(format) { w in
                w.beginRecord()
                w.fields(tree.fields)
                w.endRecord()
            }
            #expect(direct == viaTree)
        }
        let text = render(.text) { w in
            w.out.raw("T")
            w.beginRecord()
            describe(&w)
            w.endRecord()
        }
        #expect(text == """
        T
          u: 18446744073709551615
          i: -9223372036854775808
          d: 0.625
          b: yes
          n: Name (0x1234)
          m: Name (0x1234)
          e: (empty)
          x: de ad (2 bytes)
          uuid: "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
          addr: "C0:FF:EE:00:00:01"
          list: [3]
            [0] 1
            [1]
              k: "v"
              inner: [1]
                [0] [7, {z: no}]
            [2] 01 (1 bytes)

        """)
    }

    @Test func jsonOutputViolationsAreNamed() {
        func check(_ bytes: [UInt8], lines: Bool) -> String? { bytes.withUnsafeBytes { OutputBuffer.jsonOutputViolation($0, lines: lines) } }
        #expect(check(Array("{\"a\":\"°C\"}\n".utf8), lines: false) == nil)
        #expect(check(Array("{}\n{}\n".utf8), lines: true) == nil)
        #expect(check(Array("{}\n{}\n".utf8), lines: false) == "newline inside a JSON line")
        #expect(check([0x7B, 0x09, 0x7D], lines: false) == "raw control byte in JSON")
        #expect(check([0x7B, 0xC2, 0x85, 0x7D], lines: false) == "raw C1 control in JSON")
        #expect(check([0x7B, 0xFF, 0x7D], lines: false) == "JSON output is not UTF-8")
    }
}

/// The output buffer's number, hex and indent writers against the standard library's text
/// (they write with tables and word stores, so every width and boundary is tried).
@Suite struct OutputBufferFormatTests {
    func written(_ body: (inout OutputBuffer) -> Void) -> String {
        var out = OutputBuffer(capacity: 1)  // grown on the way: the capacity checks too
        body(&out)
        return out.string
    }

    static let boundaries: [UInt64] = {
        var values: [UInt64] = [0, 1, 9, 10, 11, 99, 100, 101, 255, 256, 999, 1000, 4095, 4096, 65535, 65536,
                                .max, .max - 1, UInt64(Int64.max), 1 << 63, 0xDEAD_BEEF, 12_345_678_901_234_567_890]
        var p: UInt64 = 1
        while p <= UInt64.max / 10 { values += [p - 1, p, p + 1]; p *= 10 }
        var h: UInt64 = 1
        for _ in 0 ..< 63 { values += [h - 1, h, h + 1]; h <<= 1 }
        return values
    }()

    @Test func decimalsAsTheStandardLibrary() {
        for v in Self.boundaries {
            #expect(written { $0.decimal(v) } == String(v))
            let s = Int64(bitPattern: v)
            #expect(written { $0.decimal(s) } == String(s))
        }
        #expect(written { $0.decimal(Int64.min) } == String(Int64.min))
        // Every value of the inline path (below 100) and past it.
        for v in UInt64(0) ... 300 { #expect(written { $0.decimal(v) } == String(v)) }
    }

    /// The code after a named value's label: two digits to a byte, four above.
    @Test func parenthesizedHexAsTheNamedFormat() {
        for v: UInt64 in Array(0 ... 0x1FF) + [0xFFFF, 0x10000, 0xABCDE] {
            let plain = String(v, radix: 16, uppercase: true)
            let width = v > 0xFF ? 4 : 2
            let expected = " (0x" + String(repeating: "0", count: max(0, width - plain.count)) + plain + ")"
            #expect(written { $0.parenthesizedHex(v) } == expected)
        }
    }

    @Test func upperHexAtEveryWidth() {
        for v in Self.boundaries {
            for width in [0, 1, 2, 3, 4, 5, 8, 12, 16] {
                let plain = String(v, radix: 16, uppercase: true)
                let expected = String(repeating: "0", count: max(0, width - plain.count)) + plain
                #expect(written { $0.hexUpper(v, width: width) } == expected, "\(v) width \(width)")
            }
        }
    }

    @Test func lowerHexWithAndWithoutSeparator() {
        let bytes = (0 ... 255).map { UInt8($0) }
        let pairs = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
        for n in [0, 1, 2, 7, 8, 9, 256] {
            bytes[0 ..< n].withUnsafeBytes { b in
                #expect(written { $0.hexLower(b) } == pairs[0 ..< n].joined())
                #expect(written { $0.hexLower(b, separator: UInt8(ascii: " ")) } == pairs[0 ..< n].joined(separator: " "))
            }
        }
    }

    @Test func addressesAndUUIDsAsTheirDescriptions() {
        for raw: UInt64 in [0, 0xC0_00_00_00_00_2A, 0xFF_FF_FF_FF_FF_FF, 0x01_23_45_67_89_AB] {
            let a = BluetoothAddress(rawValue: raw)
            #expect(written { $0.address(a) } == a.description)
        }
        for u in [BluetoothUUID(0x180D), BluetoothUUID(0xFEAA), BluetoothUUID(uuid32: 0x1234_5678),
                  BluetoothUUID(high: 0x6E40_0001_B5A3_F393, low: 0xE0A9_E50E_24DC_CA9E)] {
            #expect(written { $0.uuid(u) } == u.description)
        }
    }

    /// Seconds from nanoseconds: the digits Swift prints for the Double (shortest round
    /// trip) wherever that has no exponent and enough precision, and never an exponent.
    @Test func secondsAsTheDoubleWouldPrint() {
        var values: [UInt64] = [0, 100_000, 123_456_000, 1_000_000_000, 1_500_000_000, 59_999_999_999, 86_400_000_001_000]
        var x: UInt64 = 0x9E37_79B9
        for _ in 0 ..< 2000 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            values.append(100_000 + (x >> 14) % 900_000_000_000_000)  // 0.0001 s to 10 days, any nanosecond
            values.append(((x >> 20) % 900_000_000_000) * 1000)        // btsnoop's microseconds
        }
        for ns in values {
            #expect(written { $0.seconds(nanoseconds: ns) } == String(Double(ns) / 1e9), "\(ns)")
        }
        #expect(written { $0.seconds(nanoseconds: 50_000) } == "0.00005")  // Swift: 5e-05
        #expect(written { $0.seconds(nanoseconds: 1) } == "0.000000001")
        // Every digit position, below 0.0001 s too (where the Double prints an exponent):
        // the nine digits with the trailing zeros dropped.
        func reference(_ ns: UInt64) -> String {
            let fraction = String(ns % 1_000_000_000)
            var digits = String(repeating: "0", count: 9 - fraction.count) + fraction
            while digits.count > 1 && digits.hasSuffix("0") { digits.removeLast() }
            return "\(ns / 1_000_000_000).\(digits)"
        }
        var small: [UInt64] = [1, 9, 10, 99, 100, 1000, 10_000, 99_999, 100_001, 999_999_999, 1_000_000_001, 12_000_000_340]
        for power in 0 ..< 9 { for d: UInt64 in 1 ... 9 { small.append(d * [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000][power]) } }
        for ns in small + values {
            #expect(written { $0.seconds(nanoseconds: ns) } == reference(ns), "\(ns)")
        }
    }

    @Test func indentsAndFieldStartsAtEveryDepth() {
        for n in 0 ... 70 {
            #expect(written { $0.newlineIndent(n) } == "\n" + String(repeating: " ", count: n))
            for name in ["", "a", "rssi", "subevent", "service_data", "a_name_of_twenty_two_"] {
                let got = written { out in
                    out.raw("x")
                    name.utf8.withContiguousStorageIfAvailable { out.textFieldStart(indent: n, name: UnsafeRawBufferPointer($0)) }
                    out.raw("y")
                }
                #expect(got == "x\n" + String(repeating: " ", count: n) + name + ": y")
            }
        }
    }

    /// Deeper than the writer's first stack of frames: every level closes in order.
    @Test func deepNestingGrowsTheFrameStack() {
        var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 16))
        w.beginRecord()
        for _ in 0 ..< 40 { w.beginObject("o"); w.beginList("l", count: 1) }
        w.uint("", 7)
        for _ in 0 ..< 40 { w.end(); w.end() }
        w.uint("after", 1)
        w.endRecord()
        // Inside a list, items have no names.
        #expect(w.out.string == "{\"o\":{\"l\":[" + String(repeating: "{\"l\":[", count: 39) + "7"
            + String(repeating: "]}", count: 40) + ",\"after\":1}\n")
    }
}
