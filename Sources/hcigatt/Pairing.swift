import BluetoothGATT
import BluetoothLE
import BluetoothHost
import BluetoothSecurity
import BluetoothTransport
import BluetoothWire
import Glibc
import HCIGATTFormat

/// Pairing options every command that connects or serves takes.
enum SecurityOptions {
    static let flags: Set<String> = ["mitm", "sc-only", "legacy-pairing", "no-bond", "allow-repairing", "allow-debug-keys"]
    static let options: Set<String> = ["io-capability", "passkey", "confirm", "min-key-size", "bond-dir"]

    static let help = """
      --io-capability CAP    pairing: none, display-only, display-yes-no, keyboard-only,
                             keyboard-display (default none; keyboard-display with --passkey,
                             display-yes-no with --confirm)
      --passkey N            the passkey the device shows (six digits), for scripts; without
                             it a terminal is asked
      --confirm yes|no       the answer to a numeric comparison, for scripts
      --mitm                 require MITM protection (no Just Works)
      --sc-only              refuse LE legacy pairing
      --legacy-pairing       do not offer LE Secure Connections
      --min-key-size N       smallest encryption key accepted (7-16, default 16)
      --no-bond              pair without bonding
      --allow-repairing      a bonded device that pairs again may do so without MITM
                             protection (Just Works), replacing its bond; by default such a
                             pairing is refused (anyone with its address could take the
                             bond over) and `unpair` lifts it for one device
      --allow-debug-keys     accept a peer using the Secure Connections debug key (its
                             private key is public: for sniffing your own devices)
      --bond-dir DIR         where bonds are kept (default $HCIGATT_BOND_DIR, else
                             /var/lib/hcigatt/bonds): a bonded device is encrypted with its
                             stored key instead of pairing again
    """

    static func bondStore(_ args: Arguments) -> BondStore {
        if let d = args.option("bond-dir") { return BondStore(directory: d) }
        if let e = getenv("HCIGATT_BOND_DIR"), e.pointee != 0 { return BondStore(directory: String(cString: e)) }
        return BondStore(directory: BondStore.defaultDirectory)
    }

    static func configuration(_ args: Arguments) throws -> SMPConfiguration {
        var c = SMPConfiguration()
        if let text = args.option("io-capability") {
            guard let io = ioCapability(text) else {
                throw UsageError("--io-capability takes none, display-only, display-yes-no, keyboard-only or keyboard-display, not '\(text)'")
            }
            c.ioCapability = io
        } else if args.option("passkey") != nil {
            c.ioCapability = .keyboardDisplay
        } else if args.option("confirm") != nil {
            c.ioCapability = .displayYesNo
        }
        if let text = args.option("min-key-size") {
            guard let n = UInt8(text), (7 ... 16).contains(n) else { throw UsageError("--min-key-size takes 7-16, not '\(text)'") }
            c.minimumKeySize = n
        }
        if args.flag("sc-only") && args.flag("legacy-pairing") { throw UsageError("--sc-only and --legacy-pairing exclude each other") }
        c.mitm = args.flag("mitm")
        c.secureConnectionsOnly = args.flag("sc-only")
        c.secureConnections = !args.flag("legacy-pairing")
        c.bonding = !args.flag("no-bond")
        c.allowsDebugKeys = args.flag("allow-debug-keys")
        // With a display, a device typing our passkey may report its keys (shown on stderr).
        c.keypressNotifications = [.displayOnly, .displayYesNo, .keyboardDisplay].contains(c.ioCapability)
        _ = try passkey(args)
        _ = try confirm(args)
        return c
    }

    static func ioCapability(_ text: String) -> SMPIOCapability? {
        switch text {
        case "none", "no-input-no-output": .noInputNoOutput
        case "display-only": .displayOnly
        case "display-yes-no": .displayYesNo
        case "keyboard-only": .keyboardOnly
        case "keyboard-display": .keyboardDisplay
        default: nil
        }
    }

    static func passkey(_ args: Arguments) throws -> UInt32? {
        guard let text = args.option("passkey") else { return nil }
        guard text.utf8.count <= 6, let v = UInt32(text), v <= 999_999 else { throw UsageError("--passkey takes six digits (0-999999), not '\(text)'") }
        return v
    }

    static func confirm(_ args: Arguments) throws -> Bool? {
        guard let text = args.option("confirm") else { return nil }
        switch text {
        case "yes", "y": return true
        case "no", "n": return false
        default: throw UsageError("--confirm takes yes or no, not '\(text)'")
        }
    }

    /// Scripted answers, else the terminal (stdin), else refusal.
    static func agent(_ args: Arguments) throws -> PairingAgent {
        let passkey = try passkey(args), confirm = try confirm(args)
        return PairingAgent(
            displayPasskey: { link, v in
                Console.err("passkey for \(link.address): \(sixDigits(v)) (type it on the device)")
            },
            enterPasskey: { link in
                if let passkey { return passkey }
                guard isatty(0) == 1 else {
                    Console.err("\(link.address) asks for the passkey it shows; give --passkey N (stdin is not a terminal)")
                    return nil
                }
                Console.errRaw("passkey shown by \(link.address): ")
                let line = await runOnOwnThread { readLine(strippingNewline: true) }
                return line.flatMap { UInt32($0) }.flatMap { $0 <= 999_999 ? $0 : nil }
            },
            confirmNumber: { link, n in
                if let confirm {
                    Console.err("numeric comparison with \(link.address): \(sixDigits(n)); answering \(confirm ? "yes" : "no") (--confirm)")
                    return confirm
                }
                guard isatty(0) == 1 else {
                    Console.err("\(link.address) shows \(sixDigits(n)) for comparison; give --confirm yes|no (stdin is not a terminal)")
                    return false
                }
                Console.errRaw("does \(link.address) show \(sixDigits(n))? [y/N] ")
                let line = await runOnOwnThread { readLine(strippingNewline: true) }
                return line == "y" || line == "yes"
            },
            keypress: { link, type in
                // The device's user typing the passkey shown here.
                Console.err("\(link.address): \(type.name?.lowercased() ?? "keypress \(type.rawValue)")")
            })
    }

    static func sixDigits(_ v: UInt32) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, 6 - s.utf8.count)) + s
    }
}

enum PairCommand {
    static var command: Command {
        Command(
            name: "pair", summary: "Pair with a device (LE legacy or Secure Connections)",
            help: """
            Usage: hcigatt pair ADDR [--json] [OPTIONS]

            Connects and pairs (Security Manager, Core Vol 3 Part H): LE Secure Connections
            (P-256) unless --legacy-pairing, Just Works, Passkey Entry or Numeric Comparison as
            the IO capabilities decide; then the link is encrypted and keys are exchanged.
            Prints the method and the keys' properties, never the keys.

            A bonded device is encrypted with its stored key first and paired again over it;
            one that refuses the key (it removed its pairing information, or it is not the
            device that bonded) stops the command. --repair pairs without the stored key: the
            new bond replaces the old one only when it is as strong (else the old is kept).

            Options:
              --json                 one JSON object
              --repair               pair again with a bonded device that no longer knows the key
            \(SecurityOptions.help)
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["json", "repair"]), options: PeerOptions.options),
            run: { args in try await run(args) })
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.count == 1 else { throw UsageError("expected ADDR (or a device name)") }
        if let t = args.option("transport"), t.hasPrefix("l2cap:") {
            throw UsageError("pair needs an HCI transport: with \(t) the kernel pairs (its agent, bluetoothd)")
        }
        let target = try DeviceTarget(argument: args.positional[0])
        let settings = try PeerCommandSettings(args)
        let json = args.flag("json")
        try await withPeer(settings, target) { p in
            guard let link = p.connection else { throw RuntimeError("no link to pair on") }
            let r: SMPPairingResult
            do throws(BluetoothError) { r = try await CentralLink.pair(link) } catch {
                throw RuntimeError(error.message, cause: error.underlying ?? error)
            }
            var keys: [String] = []
            if r.peerLTK != nil { keys.append("ltk") }
            if r.peerIdentityResolvingKey != nil { keys.append("irk") }
            if r.peerSignatureKey != nil { keys.append("csrk") }
            if json {
                var f = [Field("address", .text("\(p.peer)")),
                         Field("secure_connections", .bool(r.secureConnections)),
                         Field("method", .text(r.method.description)),
                         Field("key_size", .uint(UInt64(r.keySize))),
                         Field("authenticated", .bool(r.authenticated)),
                         Field("bonded", .bool(r.bonded)),
                         Field("keys", .list(keys.map { .text($0) }))]
                if let id = r.peerIdentityAddress { f.append(Field("identity", .text("\(id)"))) }
                Console.out(FieldRenderer.jsonObject(f))
            } else {
                var line = "paired with \(p.peer): \(r.secureConnections ? "LE Secure Connections" : "LE legacy pairing"), \(r.method), \(r.keySize)-byte key, \(r.authenticated ? "authenticated" : "not authenticated"), \(r.bonded ? "bonded" : "not bonded")"
                if let id = r.peerIdentityAddress { line += "; identity \(id)" }
                if !keys.isEmpty { line += "; keys: \(keys.joined(separator: ", "))" }
                Console.out(line)
            }
        }
        return 0
    }
}

enum BondsCommand {
    static var command: Command {
        Command(
            name: "bonds", summary: "List the bonded devices",
            help: """
            Usage: hcigatt bonds [--json] [--bond-dir DIR]

            Lists the bonds in the bond directory: identity address, key size, authenticated,
            LE Secure Connections or legacy, the keys kept, and when the bond was made. A file
            that cannot be read is an error naming it.
            """,
            spec: Arguments.Spec(flags: ["json"], options: ["bond-dir"]),
            run: { args in try run(args) })
    }

    static func run(_ args: Arguments) throws -> Int32 {
        guard args.positional.isEmpty else { throw UsageError("bonds takes no arguments") }
        let store = SecurityOptions.bondStore(args)
        let bonds: [Bond]
        do { bonds = try store.all() } catch { throw RuntimeError(error.description) }
        for b in bonds {
            var keys: [String] = []
            if b.peerLTK != nil || b.localLTK != nil { keys.append("ltk") }
            if b.peerIRK != nil { keys.append("irk") }
            if b.peerCSRK != nil { keys.append("csrk") }
            let date = isoDate(b.created)
            if args.flag("json") {
                Console.out(FieldRenderer.jsonObject([
                    Field("identity", .text("\(b.identity)")), Field("key_size", .uint(UInt64(b.keySize))),
                    Field("authenticated", .bool(b.authenticated)), Field("secure_connections", .bool(b.secureConnections)),
                    Field("keys", .list(keys.map { .text($0) })), Field("created", .text(date)),
                ]))
            } else {
                Console.out("\(b.identity)  \(b.keySize)-byte key, \(b.authenticated ? "authenticated" : "not authenticated"), \(b.secureConnections ? "LE Secure Connections" : "legacy"), keys \(keys.joined(separator: "+")), since \(date)")
            }
        }
        if bonds.isEmpty && !args.flag("json") { Console.err("no bonds in \(store.directory)") }
        return 0
    }

    /// "2026-12-01T14:03:05Z" from seconds since 1970 (UTC; no Foundation).
    static func isoDate(_ t: Int64) -> String {
        var time = time_t(t)
        var tm = tm()
        gmtime_r(&time, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))Z"
    }
}

enum UnpairCommand {
    static var command: Command {
        Command(
            name: "unpair", summary: "Forget a bonded device",
            help: """
            Usage: hcigatt unpair AA:BB:CC:DD:EE:FF[/public|/random] [--bond-dir DIR]

            Removes the device's bond and what was kept with it. Without a type, the bond at
            that address whatever its type (when both types are bonded, name one). An
            address as `bonds` prints it ("AA:BB:CC:DD:EE:FF (random-static)") is taken too.
            """,
            spec: Arguments.Spec(flags: [], options: ["bond-dir"]),
            run: { args in try run(args) })
    }

    static func run(_ args: Arguments) throws -> Int32 {
        // `bonds` prints "ADDR (kind)": unquoted, the shell makes two arguments of it.
        let text = args.positional.joined(separator: " ")
        guard !args.positional.isEmpty, args.positional.count == 1 || args.positional[1].hasPrefix("(") else {
            throw UsageError("expected the device's identity address")
        }
        let target = try DeviceTarget(argument: text)
        guard let a = target.address else { throw UsageError("unpair takes an address (AA:BB:CC:DD:EE:FF[/random]), not a name") }
        let store = SecurityOptions.bondStore(args)
        do {
            let identity: LEAddress
            if case .address(let typed) = target {
                identity = typed
            } else {
                let bonded = try store.identities(at: a)
                guard bonded.count < 2 else {
                    throw RuntimeError("\(a) is bonded as \(bonded.map(\.description).joined(separator: " and as ")): "
                                       + "name the one to forget (\(a)/public or \(a)/random)")
                }
                guard let only = bonded.first else { throw RuntimeError("no bond for \(a) (of either type) in \(store.directory)") }
                identity = only
            }
            if try store.remove(identity) {
                Console.err("forgot \(identity)")
                return 0
            }
            let other = try store.identities(at: a)
            throw RuntimeError("no bond for \(identity) in \(store.directory)"
                               + (other.isEmpty ? "" : " (there is one for \(other.map(\.description).joined(separator: ", ")))"))
        } catch let error as BondStoreError { throw RuntimeError(error.description) }
    }
}
