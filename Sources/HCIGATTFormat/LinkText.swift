import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire

/// What the library's connected steps say, in the words of BlueZ's tools: the lookup and
/// connection (``PeerProgress``), discovery, and a device follower's events. Shared by the
/// CLI's commands and the gateway, so both say the same thing about the same link.
public enum LinkText {
    /// "a device with service 180D Heart Rate", "\"Thermo\"", "C0:DE:00:00:00:01".
    public static func what(_ target: DeviceTarget) -> String {
        if case .service(let u) = target { "a device with service \(uuidLabel(u))" } else { target.description }
    }

    /// The lines one step of opening a peer says.
    public static func progress(_ step: PeerProgress, target: DeviceTarget) -> [String] {
        switch step {
        case .scanning: return ["scanning for \(what(target))..."]
        case .found(let found):
            var lines: [String] = []
            if found.assumedPublic { lines.append("\(found.address.address) not seen while scanning; assuming a public address") }
            if let d = found.advertisement, case .name(let n) = target, !found.sameName.isEmpty {
                func label(_ x: DiscoveredDevice) -> String { "\(x.address)\(x.rssi.map { ", \($0) dBm" } ?? "")" }
                let list = ([d] + found.sameName).map(label).joined(separator: "; ")
                lines.append("\(found.sameName.count + 1) devices are named \"\(n)\": \(list). Using \(d.address) (heard first); give the address to choose another")
            }
            return lines
        case .connecting(let peer, let adapter):
            return ["connecting to \(peer)\(adapter.map { " via l2cap:hci\($0)" } ?? "")..."]
        case .connected(let link):
            var lines: [String] = []
            let peer = link.connection.address
            if let id = link.connection.identity, id.address != peer.address {
                lines.append("\(peer.address) is a private address of \(id.address) (\(id.type); resolved with its bond's IRK)")
            }
            if let security = link.bondSecurity { lines.append("encrypted with the stored bond: \(security)") }
            if let now = link.updatedParameters {
                lines.append("connection parameters: interval \(now.intervalMilliseconds) ms, latency \(now.latency), supervision timeout \(Int(now.supervisionTimeout) * 10) ms")
            }
            lines += Self.speed(link)
            return lines
        // A request refused for security: the library raises it (the kernel bearer pairs
        // through the kernel's SMP) and retries once; say so, as BlueZ's tools do.
        case .security(.raising(_, let level)): return ["raising security to \(level) (encrypting, pairing first if needed)..."]
        case .security(.raised(let level)): return ["security is \(level); retrying"]
        case .security(.failed(let failure)): return ["cannot raise security: \(failure.message)"]
        }
    }

    /// What asking for the data length and the PHY came to (nothing when neither was asked):
    /// the link as it is now, or the refusal, once.
    public static func speed(_ link: CentralLink) -> [String] {
        var lines: [String] = []
        let now = link.connection.parameters
        switch link.dataLength {
        case .notAsked: break
        case .done where now.maxTxOctets > 27 || now.maxRxOctets > 27:
            lines.append("data length: \(LEDataLength(txOctets: now.maxTxOctets, txTime: now.maxTxTime, rxOctets: now.maxRxOctets, rxTime: now.maxRxTime))")
        case .done:
            // The sizes come with LE Data Length Change, a few connection events later.
            lines.append("data length: the longest asked for; still 27 bytes until the device's controller agrees")
        case .refused(let why): lines.append("a longer data length was not taken (\(why)); the link stays at \(now.maxTxOctets) bytes")
        }
        switch link.phy {
        case .notAsked: break
        case .done(let s): lines.append("PHY: \(s.txPHY == s.rxPHY ? s.txPHY.description : "\(s.txPHY) out, \(s.rxPHY) in")")
        case .refused(let why): lines.append("the PHY asked for was not taken (\(why)); the link stays on \(now.txPHY)")
        }
        return lines
    }

    /// The link as JSON fields (`gatt --json`'s `link`; the `"kind":"link"` line of
    /// `subscribe --json` and `monitor --json`): connection parameters, PHYs, data length.
    public static func jsonFields(_ link: LELinkState) -> [Field] {
        var l = [
            Field("handle", .uint(UInt64(link.handle))),
            Field("interval_ms", .double(Double(link.interval) * 1.25)),
            Field("latency", .uint(UInt64(link.latency))),
            Field("supervision_timeout_ms", .uint(UInt64(link.supervisionTimeout) * 10)),
            Field("tx_phy", .text(link.txPHY.description)), Field("rx_phy", .text(link.rxPHY.description)),
            Field("max_tx_octets", .uint(UInt64(link.maxTxOctets))), Field("max_tx_time_us", .uint(UInt64(link.maxTxTime))),
            Field("max_rx_octets", .uint(UInt64(link.maxRxOctets))), Field("max_rx_time_us", .uint(UInt64(link.maxRxTime))),
        ]
        if let f = link.remoteFeatures { l.append(Field("remote_le_features", .list(f.names.map { .text($0) }))) }
        return l
    }

    /// What discovery did: where the database came from, its size, round trips and time.
    public static func discovery(_ r: DatabaseDiscovery, elapsed: Duration, mtu: Int, tag: String = "") -> [String] {
        var lines: [String] = []
        if let e = r.unreadableCache { lines.append("\(tag)\(e); discovering instead (the file is replaced)") }
        let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        let d = r.discovery, db = d.database
        lines.append("\(tag)\(d.source): \(db.services.count) services, \(db.characteristics.count) characteristics in \(r.roundTrips) round trip\(r.roundTrips == 1 ? "" : "s") (\(ms) ms, MTU \(mtu))")
        if let e = r.unsavedCache { lines.append("\(tag)could not keep the database with the bond: \(e)") }
        return lines
    }

    /// A library error as one line, with the hint a user needs where there is one.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let e as BluetoothError where e.kind == .notFound && e.underlying is HostError:
            // The lookup's scan found nothing: the option that gives it longer.
            return "\(e.message) (--scan-timeout)"
        case let e as BluetoothError: return e.message
        case let e as GATTError:
            if let code = e.attErrorCode, code == .insufficientAuthentication || code == .insufficientEncryption {
                return "\(e) (the attribute needs a paired, encrypted link: pair first)"
            }
            return e.description
        case let e as HostError: return e.description
        case let e as TransportError: return e.message
        default: return "\(error)"
        }
    }

    /// A value read on connecting: decoded where a decoder exists, else as ``ValueFormat/line``.
    public static func readValue(_ c: GATTCharacteristic, _ value: [UInt8]) -> String {
        let text = value.withUnsafeBytes { buf in
            (try? CharacteristicDecoder.decode(uuid: c.uuid, value: buf))??.summary
        } ?? ValueFormat.line(c.uuid, value)
        return "\(c.name ?? c.uuid.description): \(text)"
    }
}

/// A device follower's steps as lines (every event but the values), naming the device once
/// it is connected when several devices share the output.
public struct FollowNarrator: Sendable {
    /// How ``FollowEvent/retrying(failure:device:retryIn:)`` is said.
    public enum Retrying: Sendable {
        /// A lost link is followed again at once ("link lost: …; reconnecting...").
        case afterLinkLoss(String)
        /// Every ending is retried after the back-off ("…; trying again in 4 s").
        case withBackoff
    }

    /// The device followed.
    public let target: DeviceTarget
    /// Lines start with the device's address once it is connected.
    public let tagged: Bool
    /// How a retry is said.
    public let retrying: Retrying
    /// The prefix lines have now ("C0:DE:00:00:00:01: " once tagged and connected).
    public private(set) var tag = ""

    /// A narrator for one follower.
    public init(target: DeviceTarget, tagged: Bool, retrying: Retrying) {
        self.target = target
        self.tagged = tagged
        self.retrying = retrying
    }

    /// The lines `event` says (none for values: the consumer renders those).
    public mutating func lines(_ event: FollowEvent) -> [String] {
        switch event {
        case .progress(let step): return LinkText.progress(step, target: target)
        case .connected(let peer, let fromCache):
            if tagged { tag = "\(peer.address.address): " }
            return fromCache ? [] : ["\(tag)discovering..."]
        case .discovered(let r, let elapsed, let mtu):
            return LinkText.discovery(r, elapsed: elapsed, mtu: mtu, tag: tag)
        case .read(let c, let value):
            return [tag + LinkText.readValue(c, value)]
        case .subscribed(let c, let indications):
            return ["\(tag)subscribed to \(uuidLabel(c.uuid)) (\(indications ? "indications" : "notifications"))"]
        case .value: return []
        case .retrying(let f, let device, let pause):
            switch retrying {
            case .withBackoff:
                let why = f.map(LinkText.describe) ?? "link closed"
                return ["\(device.map { "\($0.address): " } ?? "")\(why); trying again in \(pause.components.seconds) s"]
            case .afterLinkLoss(let then):
                let why = f.map(LinkText.describe) ?? "closed"
                return ["\(device.map { "\($0): " } ?? "")link lost: \(why); \(then)"]
            }
        }
    }
}

/// "2A37 Heart Rate Measurement", or the UUID alone when it has no assigned name.
public func uuidLabel(_ u: BluetoothUUID) -> String {
    if let n = AssignedNumbers.uuidName(u) { return "\(u) \(n)" }
    return u.description
}

/// Shows values as hex, text where printable, and decoded where a decoder exists.
public enum ValueFormat {
    /// The value as text, when it is printable UTF-8.
    public static func text(_ v: [UInt8]) -> String? {
        guard !v.isEmpty, let s = String(validating: v, as: UTF8.self),
              s.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F || $0 == "\n" }) else { return nil }
        return s
    }

    /// The profile decoders' one-line summary ("36.4 °C, mouth"), or the decode error.
    public static func decoded(_ uuid: BluetoothUUID?, _ v: [UInt8]) -> String? {
        guard let uuid, CharacteristicDecoder.hasDecoder(uuid: uuid), !isPlainText(uuid) else { return nil }
        return v.withUnsafeBytes { buf in
            do throws(WireError) { return try CharacteristicDecoder.decode(uuid: uuid, value: buf)?.summary } catch {
                return "malformed: \(error)"
            }
        }
    }

    /// Strings already show as text.
    public static func isPlainText(_ uuid: BluetoothUUID) -> Bool {
        guard let u = uuid.uuid16 else { return false }
        return u == 0x2A00 || (0x2A24 ... 0x2A29).contains(u) && u != 0x2A2A
    }

    /// One line: hex (long values cut after 48 bytes unless `full`), text, decoded.
    public static func line(_ uuid: BluetoothUUID?, _ v: [UInt8], full: Bool = false) -> String {
        var s: String
        if v.isEmpty {
            s = "(empty)"
        } else if v.count > 64 && !full {
            s = Hex.string(v.prefix(48), separator: " ") + " ... (\(v.count) bytes)"
        } else {
            s = Hex.string(v, separator: " ")
        }
        if let t = text(v), full || t.count <= 64 { s += "  \"\(t)\"" }
        if let d = decoded(uuid, v) { s += "  = \(d)" }
        return s
    }

    /// The value as fields: hex, text where printable, decoded where a decoder exists.
    public static func fields(_ uuid: BluetoothUUID?, _ v: [UInt8]) -> [Field] {
        var f = [Field("hex", .bytes(v))]
        if let t = text(v) { f.append(Field("text", .text(t))) }
        if let d = decoded(uuid, v) { f.append(Field("decoded", .text(d))) }
        return f
    }
}
