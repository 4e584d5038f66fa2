@testable import HCIGATTGateway
import BluetoothWire
import Testing

/// Commands from MQTT: the payload's parsing (a small JSON object), the ledger that answers
/// a redelivered id from its first result, and the topics.
@Suite struct GatewayCommandParsingTests {
    func parse(_ text: String) throws(GatewayCommand.Refusal) -> GatewayCommand {
        try GatewayCommand.parse(Array(text.utf8))
    }

    func refusal(_ text: String) -> GatewayCommand.Refusal? {
        do { _ = try parse(text); return nil } catch { return error }
    }

    @Test func readsWritesAndTheirDefaults() throws {
        #expect(try parse(#"{"id": "1", "op": "read", "uuid": "2A19"}"#)
            == GatewayCommand(id: "1", operation: .read, attribute: .uuid(BluetoothUUID(0x2A19))))
        let w = try parse(#" { "op":"write" ,"handle":42,"hex":"0200","id":7,"timeout":2.5, "note": {"a": [1, {"b": null}]} } "#)
        #expect(w == GatewayCommand(id: "7", operation: .write, attribute: .handle(42), value: [2, 0], timeout: .milliseconds(2500)))
        let t = try parse(#"{"id": "x", "op": "write-without-response", "uuid": "68636967-6174-7400-8000-00805F9B0002", "text": "h\u00e9\n"}"#)
        #expect(t.value == Array("hé\n".utf8))
        #expect(t.attribute == .uuid(try #require(BluetoothUUID("68636967-6174-7400-8000-00805F9B0002"))))
        // The id keeps its spelling: 1e3 is not 1000.
        #expect(try parse(#"{"id": 1e3, "op": "read", "handle": 1}"#).id == "1e3")
        // A surrogate pair in an id.
        #expect(try parse(#"{"id": "\ud83d\ude00", "op": "read", "handle": 1}"#).id == "😀")
    }

    @Test(arguments: [
        (#"{"op": "read", "uuid": "2A19"}"#, nil, "no \"id\""),
        (#"{"id": true, "op": "read", "uuid": "2A19"}"#, nil, "\"id\" is a string or a number"),
        (#"{"id": "a", "uuid": "2A19"}"#, "a", "no \"op\""),
        (#"{"id": "a", "op": "erase", "uuid": "2A19"}"#, "a", "unknown op \"erase\""),
        (#"{"id": "a", "op": "read"}"#, "a", "give \"uuid\" or \"handle\""),
        (#"{"id": "a", "op": "read", "uuid": "2A19", "handle": 3}"#, "a", "not both"),
        (#"{"id": "a", "op": "read", "uuid": "battery"}"#, "a", "not a UUID"),
        (#"{"id": "a", "op": "read", "handle": 0}"#, "a", "1-65535"),
        (#"{"id": "a", "op": "read", "handle": 65536}"#, "a", "1-65535"),
        (#"{"id": "a", "op": "read", "handle": 1.5}"#, "a", "1-65535"),
        (#"{"id": "a", "op": "read", "uuid": "2A19", "hex": "00"}"#, "a", "a read takes no value"),
        (#"{"id": "a", "op": "write", "uuid": "2A19"}"#, "a", "a write needs"),
        (#"{"id": "a", "op": "write", "uuid": "2A19", "hex": "0g"}"#, "a", "pairs of hex digits"),
        (#"{"id": "a", "op": "write", "uuid": "2A19", "hex": "000"}"#, "a", "pairs of hex digits"),
        (#"{"id": "a", "op": "write", "uuid": "2A19", "hex": "00", "text": "x"}"#, "a", "not both"),
        (#"{"id": "a", "op": "read", "uuid": "2A19", "timeout": 0}"#, "a", "\"timeout\" is seconds"),
        (#"{"id": "a", "op": "read", "uuid": "2A19", "timeout": 301}"#, "a", "\"timeout\" is seconds"),
        (#"{"id": "a", "op": "read", "uuid": "2A19", "timeout": "5"}"#, "a", "a number of seconds"),
    ] as [(String, String?, String)])
    func refusesWithTheIdWhenItHasOne(text: String, id: String?, reason: String) throws {
        let r = try #require(refusal(text))
        #expect(r.id == id)
        #expect(r.reason.contains(reason), "\(r.reason)")
    }

    @Test func aValueOfMoreThan512BytesIsRefused() throws {
        let big = String(repeating: "00", count: 513)
        #expect(refusal(#"{"id": "a", "op": "write", "uuid": "2A19", "hex": "\#(big)"}"#)?.reason == "the value is 513 bytes; an attribute holds at most 512")
        #expect(try parse(#"{"id": "a", "op": "write", "uuid": "2A19", "hex": "\#(String(repeating: "00", count: 512))"}"#).value?.count == 512)
    }

    @Test(arguments: [
        "", "[]", "\"x\"", "{", #"{"id": "a""#, #"{"id" "a"}"#, #"{"id": "a",}"#, #"{"id": "a"} x"#,
        #"{"id": 01}"#, #"{"id": -}"#, #"{"id": 1.}"#, #"{"id": 1e}"#, #"{"id": tru}"#,
        #"{"id": "\x"}"#, #"{"id": "\ud83d"}"#, #"{"id": "\ude00"}"#, #"{"id": "\u12"}"#,
        "{\"id\": \"a\u{01}\"}", #"{"id": "a", "id": "b"}"#,
        String(repeating: "{\"a\":", count: 20) + "1" + String(repeating: "}", count: 20),
    ])
    func refusesWhatIsNotAJSONObject(text: String) throws {
        let r = try #require(refusal(text))
        #expect(r.id == nil)
        #expect(r.reason.hasPrefix("not a JSON object: "), "\(r.reason)")
    }

    @Test func refusesBytesThatAreNotUTF8AndPayloadsTooLong() throws {
        do {
            _ = try GatewayCommand.parse(Array(#"{"id": ""#.utf8) + [0xFF] + Array(#""}"#.utf8))
            Issue.record("parsed")
        } catch {
            #expect(error.reason == "not a JSON object: not UTF-8 at byte 8")
        }
        let long = #"{"id": "a", "op": "read", "handle": 1, "pad": ""# + String(repeating: " ", count: 4096) + #""}"#
        #expect(refusal(long)?.reason.hasPrefix("the payload is ") == true)
    }
}

@Suite struct CommandLedgerTests {
    @Test func aRedeliveredIdIsAnsweredFromItsFirstResult() {
        var ledger = CommandLedger(capacity: 3)
        #expect(ledger.begin(device: "A", id: "1") == .execute)
        #expect(ledger.begin(device: "A", id: "1") == .inProgress, "delivered again while it runs")
        ledger.finish(device: "A", id: "1", reply: "first")
        #expect(ledger.begin(device: "A", id: "1") == .answered("first"))
        #expect(ledger.begin(device: "B", id: "1") == .execute, "ids are per device")
    }

    @Test func keepsTheNewestWithinItsCapacity() {
        var ledger = CommandLedger(capacity: 2)
        for id in ["1", "2", "3"] {
            #expect(ledger.begin(device: "A", id: id) == .execute)
            ledger.finish(device: "A", id: id, reply: id)
        }
        #expect(ledger.count == 2)
        #expect(ledger.begin(device: "A", id: "3") == .answered("3"))
        #expect(ledger.begin(device: "A", id: "1") == .execute, "the oldest was forgotten")
        // Running commands are never forgotten (a redelivery would run them again): the
        // answered ones go first.
        var small = CommandLedger(capacity: 1)
        _ = small.begin(device: "A", id: "x")
        _ = small.begin(device: "A", id: "y")
        #expect(small.count == 2)
        #expect(small.begin(device: "A", id: "x") == .inProgress)
        small.finish(device: "A", id: "x", reply: "late")
        #expect(small.begin(device: "A", id: "x") == .answered("late"))
        #expect(small.begin(device: "A", id: "z") == .execute)
        #expect(small.begin(device: "A", id: "x") == .execute, "x, answered, went first")
        #expect(small.begin(device: "A", id: "y") == .inProgress, "y still runs")
    }

    @Test func repliesAreJSON() {
        #expect(CommandReply.success(id: "a\"b") == #"{"id":"a\"b","ok":true}"#)
        #expect(CommandReply.success(id: "1", fieldsJSON: #""hex":"00""#) == #"{"id":"1","ok":true,"hex":"00"}"#)
        #expect(CommandReply.failure(id: nil, error: "no \"id\"") == #"{"id":null,"ok":false,"error":"no \"id\""}"#)
    }
}

@Suite struct CommandTopicTests {
    @Test func commandTopicsNameTheDeviceAndRepliesGoBesideThem() {
        let n = GatewayNaming(gatewayID: "gw1")
        #expect(n.commandFilter == "hcigatt/gw1/+/command")
        #expect(n.commandDevice("hcigatt/gw1/A4C138123456/command") == "A4C138123456")
        #expect(n.commandDevice("hcigatt/gw2/A4C138123456/command") == nil, "another gateway's")
        #expect(n.commandDevice("hcigatt/gw1/A4C138123456/reply") == nil)
        #expect(n.commandDevice("hcigatt/gw1//command") == nil)
        #expect(n.replyTopic(level: "A4C138123456") == "hcigatt/gw1/A4C138123456/reply")
        #expect(GatewayNaming.device(level: "a4c138123456") == BluetoothAddress(0xA4, 0xC1, 0x38, 0x12, 0x34, 0x56))
        for bad in ["A4C13812345", "+4C138123456", "A4C13812345G", "A4:C1:38:12:34:56"] {
            #expect(GatewayNaming.device(level: bad) == nil, "\(bad)")
        }
        let t = GatewayNaming(gatewayID: "gw1", style: .theengs)
        #expect(t.commandFilter == "home/gw1/MQTTtoBT/+/command")
        #expect(t.commandDevice("home/gw1/MQTTtoBT/A4C138123456/command") == "A4C138123456")
        #expect(t.replyTopic(level: "A4C138123456") == "home/gw1/BTtoMQTT/A4C138123456/reply")
    }
}
