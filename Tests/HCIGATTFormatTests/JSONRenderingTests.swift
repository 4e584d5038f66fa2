import BluetoothWire
import HCIGATTFormat
import Testing

@Suite struct JSONRenderingTests {
    @Test(arguments: [
        ("", #""""#),
        ("Thermo-1", #""Thermo-1""#),
        ("say \"hi\"", #""say \"hi\"""#),
        (#"a\b"#, #""a\\b""#),
        ("line\nnext\r\ttab", #""line\nnext\r\ttab""#),
        ("\u{01}x\u{1F}", #""\u0001x\u001f""#),
        ("\"", #""\"""#),
        ("end\\", #""end\\""#),
        ("36.4 °C ✓", "\"36.4 °C ✓\""),
    ])
    func stringsAreEscapedAsJSONRequires(_ input: String, _ expected: String) {
        #expect(FieldRenderer.jsonObject([Field("s", .text(input))]) == "{\"s\":\(expected)}")
    }

    @Test func bytesAreLowercaseHexAndNestingKeepsOrder() {
        let fields = [Field("hex", .bytes([0x00, 0x0A, 0xFF, 0x1B])), Field("empty", .bytes([])),
                      Field("o", .object([Field("n", .named(0x2A, "Answer \"42\"")), Field("l", .list([.uint(1), .int(-2), .bool(true)]))])),
                      Field("d", .double(.nan))]
        #expect(FieldRenderer.jsonObject(fields)
                == #"{"hex":"000aff1b","empty":"","o":{"n":{"value":42,"name":"Answer \"42\""},"l":[1,-2,true]},"d":null}"#)
    }

    @Test func longStringsWithEscapesScatteredSurviveIntact() {
        // Runs between escapes are copied in bulk: check every boundary position.
        for gap in 0 ..< 40 {
            let run = String(repeating: "x", count: gap)
            let input = "\"" + run + "\n" + run + "\\" + run
            let expected = "\\\"" + run + "\\n" + run + "\\\\" + run
            #expect(FieldRenderer.jsonObject([Field("s", .text(input))]) == "{\"s\":\"\(expected)\"}")
        }
    }

    @Test func deleteAndC1ControlsAreEscapedOtherUTF8IsNot() {
        // A peer's string must not carry terminal control sequences into JSON output.
        let input = "a\u{7F}b\u{9B}31mc\u{85}é✓"
        #expect(FieldRenderer.jsonObject([Field("s", .text(input))]) == #"{"s":"a\u007fb\u009b31mc\u0085é✓"}"#)
    }
}
