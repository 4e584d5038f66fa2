import BluetoothProfiles
import BluetoothWire
import HCIGATTFormat

/// `hcigatt decode KIND [HEX...]`: offline decoding of packets given as hex.
enum DecodeCommand {
    /// A decoder turns one packet's bytes into a title and fields. `partial` is set when the
    /// packet is malformed after a valid prefix (e.g. AD data): the prefix is shown and the
    /// line still counts as an error.
    typealias Decoder = @Sendable (UnsafeRawBufferPointer) throws(WireError) -> Decoded

    struct Decoded {
        var title: String
        var fields: [Field]
        var partial: WireError? = nil
    }

    struct Kind: Sendable {
        var name: String
        var summary: String
        var decode: Decoder
    }

    static let kinds: [Kind] = [
        Kind(name: "h4", summary: "H4 packet: indicator (01 command, 02 ACL, 03 SCO, 04 event, 05 ISO) + HCI packet, decoded down to ATT/SMP") { buf throws(WireError) in
            dissection(try Dissector.h4(buf))
        },
        Kind(name: "event", summary: "HCI event packet without the H4 indicator (code, length, parameters)") { buf throws(WireError) in
            describe(try HCIEvent(parsing: buf))
        },
        Kind(name: "command", summary: "HCI command packet without the H4 indicator (opcode, length, parameters)") { buf throws(WireError) in
            describe(try HCICommand(parsing: buf))
        },
        Kind(name: "acl", summary: "HCI ACL data packet without the H4 indicator, with its L2CAP payload") { buf throws(WireError) in
            dissection(try Dissector.acl(buf))
        },
        Kind(name: "l2cap", summary: "L2CAP basic frame (length, channel ID, payload), with its ATT/SMP/signaling payload") { buf throws(WireError) in
            dissection(Dissector.l2cap(try L2CAPBasicFrame(parsing: buf)))
        },
        Kind(name: "att", summary: "ATT PDU (opcode + parameters)") { buf throws(WireError) in
            describe(try ATTPDU(parsing: buf))
        },
        Kind(name: "smp", summary: "SMP PDU (code + data)") { buf throws(WireError) in
            describe(try SMPPDU(parsing: buf))
        },
        Kind(name: "signaling", summary: "L2CAP LE signaling command (code, identifier, length, data)") { buf throws(WireError) in
            describe(try L2CAPSignalingCommand(parsing: buf))
        },
        adKind(keys: nil),
        Kind(name: "sfloat", summary: "IEEE-11073 16-bit SFLOAT (2 bytes, little-endian)") { buf throws(WireError) in
            let v = try SFloat(wire: buf)
            return Decoded(title: "SFLOAT", fields: [Field("value", v.fieldValue), Field("mantissa", .int(Int64(v.mantissa))), Field("exponent", .int(Int64(v.exponent)))])
        },
        Kind(name: "float", summary: "IEEE-11073 32-bit FLOAT (4 bytes, little-endian)") { buf throws(WireError) in
            let v = try MedFloat32(wire: buf)
            return Decoded(title: "FLOAT", fields: [Field("value", v.fieldValue), Field("mantissa", .int(Int64(v.mantissa))), Field("exponent", .int(Int64(v.exponent)))])
        },
        Kind(name: "datetime", summary: "Date Time characteristic 0x2A08 (7 bytes)") { buf throws(WireError) in
            describe(try DateTime(wire: buf))
        },
        Kind(name: "uuid", summary: "a UUID in wire order (2, 4 or 16 bytes, little-endian)") { buf throws(WireError) in
            let u = try BluetoothUUID(wire: buf)
            return Decoded(title: "UUID", fields: [Field("uuid", .text(u.uuidString)), Field("short", .text(u.description))])
        },
    ]

    /// `ad`: the AD structures, and the sensor reading they broadcast (BTHome, Ruuvi,
    /// pvvx/ATC1441) under `sensor`. With a bind key, its address is the advertiser's
    /// (encrypted BTHome puts it in the nonce).
    static func adKind(keys: (BluetoothAddress, SensorKeys)?) -> Kind {
        Kind(name: "ad", summary: "advertising or scan response data (AD structures), with the sensor reading it broadcasts") { buf throws(WireError) in
            let ad = AdvertisingData(buf)
            var d = describe(ad)
            switch AdvertisedSensor.find(in: ad) {
            case .success(let sensor)?:
                d.fields.append(Field("sensor", .object(FieldTree.build {
                    sensor.describe(into: &$0, address: keys?.0 ?? .zero, keys: keys?.1)
                })))
            case .failure(let e)?:
                d.fields.append(Field("sensor_error", .text(e.description)))
            case nil:
                break
            }
            do throws(WireError) { _ = try ad.validate() } catch { d.partial = error }
            return d
        }
    }

    /// `char UUID`: the characteristic value decoders of BluetoothProfiles.
    static func characteristicKind(_ uuid: BluetoothUUID) -> Kind {
        Kind(name: "char", summary: "") { buf throws(WireError) in
            guard let d = try CharacteristicDecoder.decode(uuid: uuid, value: buf) else {
                return Decoded(title: uuid.description, fields: [Field("hex", .bytes(buf))])
            }
            return Decoded(title: d.fieldTitle, fields: [Field("summary", .text(d.summary))] + d.fields)
        }
    }

    static func describe(_ v: some FieldDescribable) -> Decoded { Decoded(title: v.fieldTitle, fields: v.fields) }
    static func dissection(_ d: Dissector.Dissection) -> Decoded { Decoded(title: d.title, fields: d.fields, partial: d.error) }

    static var command: Command {
        Command(
            name: "decode",
            summary: "Decode packets given as hex (H4, HCI, ACL, L2CAP, ATT, SMP, advertising data)",
            help: help,
            spec: Arguments.Spec(flags: ["json"], options: ["bindkey"]),
            run: run
        )
    }

    static var help: String {
        var s = """
        Usage: hcigatt decode KIND [HEX...] [--json]
               hcigatt decode char UUID [HEX...] [--json]

        Decodes one packet given as hex on the command line, or, with no HEX, one packet
        per line from standard input (blank lines and lines starting with # are skipped).
        Hex may contain spaces, colons or dashes and a 0x prefix.

        Kinds:

        """
        for k in kinds { s += "  \(k.name.padding(9))\(k.summary)\n" }
        s += "  \("char".padding(9))a characteristic value: decode char UUID HEX (temperature, blood pressure,\n"
        s += "           heart rate, glucose, weight, pulse oximetry, CSC/RSC, environmental, SensorTag keys, ...)\n"
        s += """

        Options:
          --json                one JSON object per packet (JSON Lines) instead of text
          --bindkey ADDR=KEY    ad: decrypt an encrypted BTHome reading sent by ADDR (the
                                key is 32 hex digits)

        A line that is not valid hex or not a valid packet is reported on stderr with its
        line number, byte offset and reason; the other lines are still decoded, and the exit
        code is 1. Examples:
          hcigatt decode h4 04 0e 04 01 03 0c 00
          hcigatt decode ad 020106 0c095468 65726d6f2d31323334
          hcigatt decode att 1b 2a 00 00 6c 01 00 ff --json
          hcigatt decode ad 0a16d2fc4002c40903bf13      # BTHome: 25 °C, 50.55 %
        """
        return s
    }

    static func run(_ args: Arguments) throws -> Int32 {
        Console.batch = true
        guard let kindName = args.positional.first else {
            throw UsageError("missing KIND (one of: \(kinds.map(\.name).joined(separator: ", ")))")
        }
        var hexArgs = args.positional.dropFirst()
        var kind: Kind
        if kindName == "char" {
            // `decode char UUID HEX`: a characteristic value, decoded by the profile decoders.
            guard let uuidText = hexArgs.first else { throw UsageError("decode char needs a characteristic UUID, e.g. 2A1C") }
            guard let uuid = BluetoothUUID(uuidText) else { throw UsageError("'\(uuidText)' is not a UUID") }
            guard CharacteristicDecoder.hasDecoder(uuid: uuid) else {
                let known = CharacteristicDecoder.supportedUUIDs.map { Hex.pad($0, 4) }.joined(separator: " ")
                throw UsageError("no decoder for \(uuidLabel(uuid)); decoders exist for \(known)")
            }
            hexArgs = hexArgs.dropFirst()
            kind = characteristicKind(uuid)
        } else {
            guard let k = kinds.first(where: { $0.name == kindName }) else {
                throw UsageError("unknown kind '\(kindName)' (one of: \(kinds.map(\.name).joined(separator: ", ")), char)")
            }
            kind = k
        }
        if let text = args.option("bindkey") {
            guard kind.name == "ad" else { throw UsageError("--bindkey is for decode ad") }
            switch SensorKeys.parse(text) {
            case .success(let (address, key)):
                var keys = SensorKeys()
                keys.set(key, for: address)
                kind = adKind(keys: (address, keys))
            case .failure(let e):
                throw UsageError(e.description)
            }
        }
        let json = args.flag("json")
        var failures = 0
        if !hexArgs.isEmpty {
            if !decodeLine(hexArgs.joined(separator: " "), kind: kind, json: json, line: nil) { failures += 1 }
        } else {
            var lineNumber = 0
            while let line = readLine() {
                lineNumber += 1
                let trimmed = line.trimmingSpaces
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                if !decodeLine(trimmed, kind: kind, json: json, line: lineNumber) { failures += 1 }
            }
        }
        Console.flush()
        return failures == 0 ? 0 : 1
    }

    /// Decodes one packet; prints it or a one-line error. Returns false on error.
    static func decodeLine(_ text: String, kind: Kind, json: Bool, line: Int?) -> Bool {
        let whereText = line.map { "line \($0): " } ?? ""
        let bytes: [UInt8]
        switch Hex.parse(text) {
        case .success(let b): bytes = b
        case .failure(let e):
            Console.err("hcigatt decode: \(whereText)bad hex: \(e)")
            return false
        }
        if bytes.isEmpty {
            Console.err("hcigatt decode: \(whereText)no bytes given")
            return false
        }
        let result: Result<Decoded, WireError> = bytes.withUnsafeBytes { buf in
            do throws(WireError) { return .success(try kind.decode(buf)) } catch { return .failure(error) }
        }
        switch result {
        case .success(let d):
            if json {
                Console.out(FieldRenderer.json(type: kind.name, title: d.title, fields: d.fields))
            } else {
                Console.out(FieldRenderer.text(title: d.title, fields: d.fields))
            }
            if let e = d.partial {
                Console.err("hcigatt decode: \(whereText)malformed \(kind.name) packet: \(e)")
                return false
            }
            return true
        case .failure(let e):
            Console.err("hcigatt decode: \(whereText)malformed \(kind.name == "char" ? "characteristic value" : "\(kind.name) packet"): \(e)")
            return false
        }
    }
}

extension String {
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let end = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[start...end])
    }
}
