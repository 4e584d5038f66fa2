import BluetoothWire
import Testing

@Suite struct MessageFramerTests {
    @Test func messagesSplitAndJoinedAcrossPieces() {
        var f = MessageFramer()
        #expect(f.append(Array("hel".utf8)).isEmpty)
        #expect(f.append(Array("lo\r\nwor".utf8)) == ["hello"], "a CR before the newline is dropped")
        #expect(f.append(Array("ld\n\n".utf8)) == ["world", ""])
        #expect(f.flush() == nil)
        let pieces = MessageFramer.pieces("ünï", size: 2)
        #expect(pieces == [[0xC3, 0xBC], [0x6E, 0xC3], [0xAF, 0x0A]])
    }

    @Test func aPeerThatNeverSendsANewlineIsCutAtTheLimit() {
        var f = MessageFramer()
        var out: [String] = []
        for _ in 0 ..< 100 { out += f.append([UInt8](repeating: 0x61, count: 700)) }
        #expect(out.count == 1 && out[0].utf8.count >= MessageFramer.limit)
        #expect(f.pending.count == 70_000 - out[0].utf8.count)
    }

    @Test func printableHidesControlCharacters() {
        #expect(MessageFramer.printable("a\u{1B}[31mb\tc\u{9B}d\u{7F}é") == "a\u{FFFD}[31mb\tc\u{FFFD}d\u{FFFD}é")
        #expect(MessageFramer.printable("plain") == "plain")
    }
}
