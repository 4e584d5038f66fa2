import BluetoothHost
import BluetoothLE
import BluetoothWire
import HCIGATTProxy
#if canImport(Glibc)
import Glibc
#endif

/// `hcigatt proxy`: a Home Assistant Bluetooth proxy (the ESPHome native API) on this
/// controller. The options become ``ProxySettings``; the library runs it; this renders logs.
enum ProxyCommand {
    static let flags: Set<String> = ControllerOptions.flags.union(["passive", "json", "insecure-plaintext", "no-mdns"])
    static let options: Set<String> = ControllerOptions.options.union(["listen", "name", "friendly-name", "key", "key-file", "state-dir", "slots", "passkey-file"])

    static var command: Command {
        Command(name: "proxy", summary: "A Home Assistant Bluetooth proxy (ESPHome native API, encrypted) on this controller",
                help: help, spec: Arguments.Spec(flags: flags, options: options), run: { args in try await run(args) })
    }

    static let defaultStateDirectory = "/var/lib/hcigatt/proxy"

    static let help = """
    Usage: hcigatt proxy [--listen [ADDR:]PORT] [--name NAME] [--key BASE64 | --key-file FILE]
                         [--passive] [--state-dir DIR] [--json] [OPTIONS]

    Serves Home Assistant's ESPHome integration as a Bluetooth proxy, on raw HCI: every
    advertisement this controller hears is forwarded to the clients that subscribe (in
    ESPHome's batches, advertising data and scan response together), and scanning never
    pauses. Add it in Home Assistant under Settings → Devices & services → Add → ESPHome,
    host = this machine, port 6053, with the encryption key the first start prints.
    Runs until Ctrl-C or SIGTERM; each client is logged on stderr.

    Options:
      --listen [ADDR:]PORT   where to listen (default 6053 on every address, IPv4 and IPv6;
                             ADDR an IPv4 address or [IPv6])
      --name NAME            the device name Home Assistant shows (default: this host's
                             name; lowercase letters, digits and '-', at most 31)
      --friendly-name TEXT   the name shown in the UI (default NAME)
      --key BASE64           the encryption key (32 bytes in Base64, as Home Assistant shows)
      --key-file FILE        the key in a file (Home Assistant may replace it there)
                             Default: <state-dir>/proxy.key, made on the first start
      --insecure-plaintext   no encryption: anyone on the network may use the radio
      --passive              scan without scan requests (no scan responses)
      --slots N              devices connected for clients at once (default 5; an ESP32
                             proxy has 3); lowered to what the controller takes when it
                             refuses a link for want of room
      --state-dir DIR        the key and the proxy's identity (default \(defaultStateDirectory))
      --no-mdns              do not announce the proxy over mDNS (_esphomelib._tcp)
      --passkey ADDR=NNNNNN  the passkey a device shows (or has printed on it), for Passkey
                             Entry when Home Assistant pairs it; repeat for more devices
      --passkey-file FILE    the same, one ADDR=NNNNNN a line (# comments)
      --json                 log JSON Lines on stderr
    \(ControllerOptions.help)
    """

    struct Settings {
        var proxy: ProxySettings
        var controller: ControllerSettings
        var json: Bool
        /// A key made on this start: printed once.
        var newKey: [UInt8]?
    }

    static func parseListen(_ text: String) throws -> (String, UInt16) {
        func port(_ p: Substring) throws -> UInt16 {
            guard let n = UInt16(p) else { throw UsageError("--listen takes [ADDR:]PORT with PORT 0 to 65535, not '\(text)'") }
            return n
        }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let addr = String(text[text.index(after: text.startIndex) ..< close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw UsageError("--listen: after [\(addr)] comes :PORT, in '\(text)'") }
            return (addr, try port(rest.dropFirst()))
        }
        if let colon = text.lastIndex(of: ":") {
            let addr = String(text[..<colon])
            if addr.contains(":") { throw UsageError("--listen: an IPv6 address goes in brackets, [\(addr)]:PORT") }
            return (addr.isEmpty ? "::" : addr, try port(text[text.index(after: colon)...]))
        }
        return ("::", try port(Substring(text)))
    }

    /// ESPHome's node name rules: what HA takes as a device name.
    static func nodeName(_ text: String) -> String? {
        let n = text.lowercased()
        guard !n.isEmpty, n.utf8.count <= 31, n.utf8.allSatisfy({ (0x61 ... 0x7A).contains($0) || (0x30 ... 0x39).contains($0) || $0 == 0x2D }),
              !n.hasPrefix("-"), !n.hasSuffix("-") else { return nil }
        return n
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "hcigatt-proxy" }
        let raw = String(cString: buffer).split(separator: ".").first.map(String.init) ?? ""
        // Made to fit the rules: other characters become '-'.
        let mapped = String(raw.lowercased().map { c -> Character in
            c.isASCII && (c.isLetter || c.isNumber) ? c : "-"
        }.prefix(31)).trimmingCharacters(in: "-")
        return mapped.isEmpty ? "hcigatt-proxy" : mapped
    }

    static func settings(_ args: Arguments) throws -> Settings {
        guard args.positional.isEmpty else { throw UsageError("proxy takes no arguments, only options (see hcigatt help proxy)") }
        var (address, port): (String, UInt16) = ("::", 6053)
        if let l = args.option("listen") { (address, port) = try parseListen(l) }
        let name: String
        if let given = args.option("name") {
            guard let n = nodeName(given) else {
                throw UsageError("--name takes lowercase letters, digits and '-' (at most 31, Home Assistant's device name rules), not '\(given)'")
            }
            name = n
        } else {
            name = hostName()
        }
        let plaintext = args.flag("insecure-plaintext")
        let keyText = args.option("key"), keyFile = args.option("key-file")
        if keyText != nil && keyFile != nil { throw UsageError("give --key or --key-file, not both") }
        if plaintext && (keyText != nil || keyFile != nil) { throw UsageError("--insecure-plaintext is without a key: leave out --key and --key-file") }
        var slots = 5
        if let text = args.option("slots") {
            guard let n = Int(text), (1 ... 64).contains(n) else { throw UsageError("--slots takes 1 to 64, not '\(text)'") }
            slots = n
        }
        // --passkey here is per device (ADDR=NNNNNN), not the one passkey of the other commands.
        let passkeys = try passkeyTable(args)
        var controller = try ControllerSettings(args.removing(["passkey"]))
        controller.options.pairingAgent = agent(passkeys)
        if !passkeys.isEmpty, args.option("io-capability") == nil {
            // A keyboard: a device that displays (or was given) a passkey gets Passkey Entry, and
            // never Numeric Comparison, which nobody could answer here.
            controller.options.security.ioCapability = .keyboardOnly
        }
        if let text = keyText, Base64.decode(text.trimmingCharacters(in: " "))?.count != 32 {
            throw UsageError("--key takes 32 bytes in Base64 (44 characters ending in '=', as Home Assistant shows), not '\(text)'")
        }
        // State is read (and made) last, once every option is known to be good: a key made
        // by a run that then stops on a typo would never be shown.
        let state = ProxyState(directory: args.option("state-dir") ?? defaultStateDirectory)
        var psk: [UInt8]?
        var writable: String?
        var newKey: [UInt8]?
        do {
            if let keyText {
                guard let k = Base64.decode(keyText.trimmingCharacters(in: " ")), k.count == 32 else {
                    throw UsageError("--key takes 32 bytes in Base64 (44 characters ending in '=', as Home Assistant shows), not '\(keyText)'")
                }
                psk = k
            } else if let keyFile {
                guard let k = try ProxyState.readKey(keyFile) else { throw RuntimeError("--key-file \(keyFile): no such file") }
                psk = k
                writable = keyFile
            } else if !plaintext {
                let (k, created) = try state.keyOrNew()
                psk = k
                writable = state.keyPath
                if created { newKey = k }
            }
        } catch let e as ProxyStateError {
            throw RuntimeError("\(e)")
        }
        let identity: String
        do throws(ProxyStateError) { identity = try state.identity() } catch { throw RuntimeError("\(error)") }
        var proxy = ProxySettings(address: address, port: port, name: name, friendlyName: args.option("friendly-name"),
                                  identity: identity, psk: psk, keyFile: writable, passive: args.flag("passive"), slots: slots,
                                  version: version)
        proxy.mdns = !args.flag("no-mdns")
        return Settings(proxy: proxy, controller: controller, json: args.flag("json"), newKey: newKey)
    }

    /// The passkeys by device: --passkey ADDR=NNNNNN and the lines of --passkey-file.
    static func passkeyTable(_ args: Arguments) throws -> [BluetoothAddress: UInt32] {
        var table: [BluetoothAddress: UInt32] = [:]
        func take(_ entry: String, _ source: String) throws {
            let parts = entry.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: " \t") }
            guard parts.count == 2, let address = BluetoothAddress(parts[0]), parts[1].utf8.count == 6,
                  let passkey = UInt32(parts[1]) else {
                throw UsageError("\(source) takes ADDR=NNNNNN (an address and six digits), not '\(entry)'")
            }
            table[address] = passkey
        }
        for e in args.all("passkey") { try take(e, "--passkey") }
        if let file = args.option("passkey-file") {
            let read: String?
            do throws(ProxyStateError) { read = try ProxyState.readText(file) } catch { throw RuntimeError("--passkey-file \(error)") }
            guard let text = read else { throw RuntimeError("--passkey-file \(file): no such file") }
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let l = String(line).trimmingCharacters(in: " \t\r")
                if l.isEmpty || l.hasPrefix("#") { continue }
                try take(l, "--passkey-file \(file) line \(n + 1)")
            }
        }
        return table
    }

    /// Passkeys from the table by the device's address (its identity once known); nothing
    /// to confirm or show on a proxy.
    static func agent(_ table: [BluetoothAddress: UInt32]) -> PairingAgent {
        PairingAgent(
            displayPasskey: { link, v in Console.err("\(link.address): passkey \(SecurityOptions.sixDigits(v)) to type on the device") },
            enterPasskey: { link in
                if let p = table[link.peerIdentity.address] ?? table[link.address.address] { return p }
                Console.err("\(link.address) asks for a passkey: give --passkey \(link.address.address)=NNNNNN")
                return nil
            },
            confirmNumber: { link, n in
                Console.err("\(link.address) asks to compare \(SecurityOptions.sixDigits(n)): refused (nobody to answer on a proxy)")
                return false
            },
            keypress: { _, _ in })
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        let s = try settings(args)
        if let k = s.newKey {
            Console.err("proxy: made a new encryption key in \(s.proxy.keyFile ?? "")\n  \(Base64.encode(k))\n"
                        + "  Home Assistant asks for it when you add this proxy (ESPHome, host = this machine, port \(s.proxy.port)).")
        }
        if s.proxy.psk == nil {
            Console.err("warning: --insecure-plaintext: anyone who reaches port \(s.proxy.port) can use this radio")
        }
        let controller = try await LocalController.open(s.controller)
        let proxy: BluetoothProxy
        do throws(APIServerError) {
            proxy = try BluetoothProxy(host: controller.host, settings: s.proxy, log: { render($0, json: s.json) })
        } catch {
            try? await controller.close()
            throw RuntimeError("\(error)")
        }
        var failure: (any Error)?
        do {
            _ = try await runInterruptible { try await proxy.run() }
        } catch {
            failure = error
        }
        try? await controller.close()
        if let failure {
            if let b = failure as? BluetoothError { throw RuntimeError(b.message) }
            throw failure
        }
        return 0
    }

    static func render(_ e: ProxyLog, json: Bool) {
        if json {
            var o = OutputBuffer(capacity: 256)
            o.utf8("{\"event\":")
            switch e {
            case .listening(let a, let p, let enc):
                o.jsonString("listening"); o.utf8(",\"address\":"); o.jsonString(a); o.utf8(",\"port\":\(p),\"encrypted\":\(enc)")
            case .clientConnected(let id, let peer):
                o.jsonString("client-connected"); o.utf8(",\"client\":\(id.rawValue),\"peer\":"); o.jsonString(peer)
            case .clientReady(let id, let info, let api):
                o.jsonString("client-ready"); o.utf8(",\"client\":\(id.rawValue),\"info\":"); o.jsonString(info); o.utf8(",\"api\":"); o.jsonString(api)
            case .clientClosed(let id, let reason):
                o.jsonString("client-closed"); o.utf8(",\"client\":\(id.rawValue),\"reason\":"); o.jsonString(reason)
            case .scanning(let active):
                o.jsonString("scanning"); o.utf8(",\"active\":\(active)")
            case .keyChanged(let cleared):
                o.jsonString("key-changed"); o.utf8(",\"cleared\":\(cleared)")
            case .keyRefused(let why):
                o.jsonString("key-refused"); o.utf8(",\"reason\":"); o.jsonString(why)
            case .link(let address, let event):
                o.jsonString("link"); o.utf8(",\"address\":"); o.jsonString(address.description); o.utf8(",\"what\":"); o.jsonString(event)
            case .mdns(let what):
                o.jsonString("mdns"); o.utf8(",\"what\":"); o.jsonString(what)
            case .slots(let n, let why):
                o.jsonString("slots"); o.utf8(",\"slots\":\(n),\"why\":"); o.jsonString(why)
            }
            o.utf8("}")
            Console.err(o.string)
            return
        }
        switch e {
        case .listening(let a, let p, let enc):
            Console.err("proxy: listening on \(a.contains(":") ? "[\(a)]" : a):\(p)\(enc ? ", encrypted" : ", NOT encrypted")")
        case .clientConnected(let id, let peer): Console.err("\(id) connected from \(peer)")
        case .clientReady(let id, let info, let api): Console.err("\(id) is \(info) (API \(api))")
        case .clientClosed(let id, let reason): Console.err("\(id) closed: \(reason)")
        case .scanning(let active): Console.err("proxy: scanning \(active ? "actively" : "passively")")
        case .keyChanged(let cleared): Console.err(cleared ? "proxy: Home Assistant cleared the key" : "proxy: Home Assistant set a new key (used from the next connection)")
        case .keyRefused(let why): Console.err("proxy: key not changed: \(why)")
        case .link(let address, let event): Console.err("\(address): \(event)")
        case .mdns(let what): Console.err("proxy: mDNS: \(what)")
        case .slots(_, let why): Console.err("proxy: \(why)")
        }
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let drop = Set(set)
        var s = Substring(self)
        while let f = s.first, drop.contains(f) { s = s.dropFirst() }
        while let l = s.last, drop.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
