import BluetoothHost
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat

/// `hcigatt info`, `hcigatt cmd` and `hcigatt list`.
enum InfoCommand {
    static var command: Command {
        Command(
            name: "info", summary: "Show the controller: version, manufacturer, address, LE features, buffers",
            help: """
            Usage: hcigatt info [--json] [OPTIONS]

            Initialises the controller (HCI_Reset and the read commands) and prints what it
            reports about itself.

            Options:
              --json                 one JSON object instead of text
            \(ControllerOptions.help)
            """,
            spec: Arguments.Spec(flags: ControllerOptions.flags.union(["json"]), options: ControllerOptions.options),
            run: { args in try await run(args) }
        )
    }

    static func version(_ v: HCICoreVersion) -> String { "\(v.name ?? "unknown") (0x\(Hex.pad(v.rawValue, 2)))" }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.isEmpty else { throw UsageError("unexpected argument '\(args.positional[0])'") }
        let controller = try await LocalController.open(args)
        let i = controller.host.info
        try await controller.close()
        let manufacturer = "\(i.manufacturerName ?? "unknown") (0x\(Hex.pad(i.manufacturer, 4)))"
        let buffers = "\(i.aclBufferLength) bytes x \(i.aclBufferCount)"
        let iso = i.isoBuffer.map { "\($0.length) bytes x \($0.count)" }
        let scanning = i.supportsExtendedScanning ? "extended" : "legacy"
        if args.flag("json") {
            var f: [Field] = [
                Field("transport", .text(controller.transportName)),
                Field("address", .text(i.address.description)),
                Field("hci_version", .named(UInt64(i.hciVersion.rawValue), i.hciVersion.name ?? "unknown")),
                Field("hci_revision", .uint(UInt64(i.hciRevision))),
                Field("lmp_version", .named(UInt64(i.lmpVersion.rawValue), i.lmpVersion.name ?? "unknown")),
                Field("lmp_subversion", .uint(UInt64(i.lmpSubversion))),
                Field("manufacturer", .named(UInt64(i.manufacturer), i.manufacturerName ?? "unknown")),
                Field("le_acl_buffer_length", .uint(UInt64(i.aclBufferLength))),
                Field("le_acl_buffer_count", .uint(UInt64(i.aclBufferCount))),
                Field("le_features", .list(i.leFeatures.names.map { .text($0) })),
                Field("le_features_raw", .uint(i.leFeatures.rawValue)),
                Field("scanning", .text(scanning)),
            ]
            if let b = i.isoBuffer {
                f.append(Field("iso_buffer_length", .uint(UInt64(b.length))))
                f.append(Field("iso_buffer_count", .uint(UInt64(b.count))))
            }
            Console.out(FieldRenderer.jsonObject(f))
            return 0
        }
        var lines = [
            ("Transport", controller.transportName),
            ("Address", i.address.description),
            ("HCI version", "\(version(i.hciVersion)), revision 0x\(Hex.pad(i.hciRevision, 4))"),
            ("LMP version", "\(version(i.lmpVersion)), subversion 0x\(Hex.pad(i.lmpSubversion, 4))"),
            ("Manufacturer", manufacturer),
            ("LE ACL buffers", buffers),
        ]
        if let iso { lines.append(("ISO buffers", iso)) }
        lines.append(("Scanning", scanning))
        for (k, v) in lines { Console.out(k.padding(16) + v) }
        Console.out("LE features")
        for name in i.leFeatures.names { Console.out("  " + name) }
        return 0
    }
}

enum CmdCommand {
    static var command: Command {
        Command(
            name: "cmd", summary: "Send one raw HCI command and print the controller's answer",
            help: """
            Usage: hcigatt cmd OPCODE [PARAMETERS-HEX...] [--timeout S] [OPTIONS]

            Sends HCI command OPCODE (e.g. 0x1009 or 1009 for HCI_Read_BD_ADDR) with the
            given parameter bytes after initialising the controller, and prints the
            Command Complete (decoded where hcigatt knows the command) or Command Status.
            A controller that does not answer within --timeout gives an error (exit 1).

            Options:
              --timeout S            seconds to wait for the answer (default 5)
            \(ControllerOptions.help)
            """,
            spec: Arguments.Spec(flags: ControllerOptions.flags, options: ControllerOptions.options.union(["timeout"])),
            run: { args in try await run(args) }
        )
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard let opText = args.positional.first else { throw UsageError("missing OPCODE") }
        var digits = Substring(opText)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard digits.count == 4, let raw = UInt16(digits, radix: 16) else {
            throw UsageError("OPCODE is 4 hex digits like 0x1009, not '\(opText)'")
        }
        let params: [UInt8]
        switch Hex.parse(args.positional.dropFirst().joined(separator: " ")) {
        case .success(let b): params = b
        case .failure(let e): throw UsageError("bad parameter hex: \(e)")
        }
        guard params.count <= 255 else { throw UsageError("at most 255 parameter bytes, not \(params.count)") }
        let timeout = try ControllerOptions.seconds(args, "timeout", default: 5, range: 0.01 ... 600)
        let opcode = HCIOpcode(rawValue: raw)
        let packet: [UInt8] = [0x01, UInt8(raw & 0xFF), UInt8(raw >> 8), UInt8(params.count)] + params
        let controller = try await LocalController.open(args)
        let result: CommandReturn
        do {
            result = try await controller.host.send(packet: packet, opcode: opcode, timeout: timeout)
        } catch {
            try? await controller.close()
            throw RuntimeError(error.description)
        }
        try await controller.close()
        if result.isCommandStatus {
            Console.out("\(opcode): Command Status \(result.status)")
            return 0
        }
        // Show it the way `decode` shows a Command Complete event.
        let event: [UInt8] = [0x0E, UInt8(truncatingIfNeeded: 3 + result.returnParameters.count), 0x01,
                              UInt8(raw & 0xFF), UInt8(raw >> 8)] + result.returnParameters
        let text: String? = event.withUnsafeBytes { buf in
            do throws(WireError) {
                let e = try HCIEvent(parsing: buf)
                return FieldRenderer.text(title: e.fieldTitle, fields: e.fields)
            } catch { return nil }
        }
        Console.out(text ?? "\(opcode): \(Hex.string(result.returnParameters, separator: " "))")
        return 0
    }
}

enum ListCommand {
    static var command: Command {
        Command(
            name: "list", summary: "List the kernel's Bluetooth adapters and whether hcigatt can use them",
            help: """
            Usage: hcigatt list [--json]

            Lists adapters (hciN) from the kernel's HCI ioctls: address, up/down, bus, and
            whether the HCI user channel (exclusive access, `--transport user:hciN`) is free.
            """,
            spec: Arguments.Spec(flags: ["json"], options: []),
            run: { args in try run(args) }
        )
    }

    static func run(_ args: Arguments) throws -> Int32 {
        guard args.positional.isEmpty else { throw UsageError("unexpected argument '\(args.positional[0])'") }
        let adapters: [AdapterInfo]
        do { adapters = try listAdapters() } catch { throw RuntimeError(error.message) }
        if args.flag("json") {
            for a in adapters {
                Console.out(FieldRenderer.jsonObject([
                    Field("name", .text(a.name)), Field("index", .uint(UInt64(a.index))),
                    Field("address", .text(a.address.description)), Field("up", .bool(a.isUp)),
                    Field("bus", .text(a.bus)), Field("type", .text(a.controllerType)),
                    Field("user_channel", .text(a.userChannel.description)),
                ]))
            }
            return 0
        }
        if adapters.isEmpty {
            Console.out("no Bluetooth adapters (the kernel has Bluetooth support but no controller is attached)")
            return 0
        }
        Console.out("adapter".padding(9) + "address".padding(19) + "state".padding(7) + "bus".padding(8) + "user channel")
        for a in adapters {
            Console.out(a.name.padding(9) + a.address.description.padding(19) + (a.isUp ? "up" : "down").padding(7)
                        + a.bus.padding(8) + a.userChannel.description)
        }
        return 0
    }
}
