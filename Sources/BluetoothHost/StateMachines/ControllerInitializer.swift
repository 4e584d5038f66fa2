import BluetoothWire

/// The controller init sequence, sans-I/O: one command at a time, each decision taken
/// from the previous answer.
///
/// 1. HCI_Reset
/// 2. HCI_Read_Local_Version_Information
/// 3. HCI_Read_BD_ADDR
/// 4. HCI_Read_Local_Supported_Commands (failure tolerated: treated as "nothing claimed")
/// 5. HCI_Read_Local_Supported_Features (failure tolerated)
/// 6. HCI_LE_Read_Local_Supported_Features
/// 7. HCI_LE_Read_Buffer_Size [v2] when Supported_Commands octet 41 bit 5 is set; on any
///    failure (Unknown Command, timeout, ...) HCI_LE_Read_Buffer_Size [v1]
/// 8. HCI_Read_Buffer_Size when the LE ACL length is 0 (shared BR/EDR buffers)
/// 9. With extended advertising: HCI_LE_Read_Maximum_Advertising_Data_Length and
///    HCI_LE_Read_Number_of_Supported_Advertising_Sets (failures tolerated: legacy advertising)
/// 10. With LE Data Packet Length Extension: HCI_LE_Read_Maximum_Data_Length and
///     HCI_LE_Write_Suggested_Default_Data_Length with its maximum TX values, so every new
///     link asks for the longest payloads (failures tolerated: 27-byte links)
/// 11. With LE 2M or Coded PHY: HCI_LE_Set_Default_PHY allowing every PHY the controller has
///     (a peer's PHY request can then be taken; failure tolerated)
/// 12. HCI_Set_Event_Mask, 13. HCI_LE_Set_Event_Mask
///
/// Drive it with ``start()`` then ``handle(_:)`` with each command's result until it
/// returns `.finished` or `.failed`.
public struct ControllerInitializer: Sendable {
    /// The command being run (in order; `done` at the end).
    public enum Step: Sendable, Equatable {
        case reset, readLocalVersion, readBDADDR, readSupportedCommands, readFeatures, leReadFeatures
        case leReadBufferSizeV2, leReadBufferSizeV1, readBufferSize
        case leReadMaximumAdvertisingDataLength, leReadNumberOfSupportedAdvertisingSets
        case leReadMaximumDataLength, leWriteSuggestedDefaultDataLength, leSetDefaultPHY
        case setEventMask, leSetEventMask, done
    }

    /// A command to submit to the command flow.
    public struct Command: Sendable, Equatable {
        /// The HCI command packet (H4 indicator included).
        public var packet: [UInt8]
        /// Its opcode, to match the answer.
        public var opcode: HCIOpcode
        /// nil: the flow's default timeout.
        public var timeout: UInt64?
    }

    /// What the driver does next.
    public enum Action: Sendable {
        case send(Command)
        case finished(ControllerInfo)
        case failed(HostError)
    }

    /// HCI events the host enables (Core Vol 4 Part E §7.3.1).
    public static let eventMask: HCIEventMask = .leHost
    /// LE subevents the host enables (Core Vol 4 Part E §7.8.1).
    public static let leEventMask: LEEventMask = [
        .connectionComplete, .advertisingReport, .connectionUpdateComplete, .readRemoteFeaturesComplete,
        .longTermKeyRequest, .remoteConnectionParameterRequest, .dataLengthChange,
        .readLocalP256PublicKeyComplete, .generateDHKeyComplete, .enhancedConnectionComplete,
        .directedAdvertisingReport, .phyUpdateComplete, .extendedAdvertisingReport, .scanTimeout,
        .advertisingSetTerminated, .channelSelectionAlgorithm,
    ]

    /// The step in progress.
    public private(set) var step: Step = .reset
    /// What was learned so far.
    public private(set) var info = ControllerInfo()
    /// Timeout for the LE Read Buffer Size [v2] probe (some controllers claim it and never
    /// answer); nil: the default command timeout.
    public var probeTimeout: UInt64?

    /// An initializer; `probeTimeout` as above.
    public init(probeTimeout: UInt64? = 2_000_000_000) {
        self.probeTimeout = probeTimeout
    }

    /// The first command (HCI_Reset).
    public mutating func start() -> Action {
        step = .reset
        info = ControllerInfo()
        return send(ResetCommand())
    }

    /// Feeds the result of the command sent last.
    public mutating func handle(_ result: Result<CommandReturn, HostError>) -> Action {
        do throws(HostError) {
            return try advance(result)
        } catch {
            step = .done
            return .failed(error)
        }
    }

    private mutating func advance(_ result: Result<CommandReturn, HostError>) throws(HostError) -> Action {
        switch step {
        case .reset:
            _ = try required(result)
            return send(ReadLocalVersionInformationCommand())
        case .readLocalVersion:
            let v = try decode(try required(result), HCIReadLocalVersionInformationReturn.self)
            info.hciVersion = v.hciVersion
            info.hciRevision = v.hciSubversion
            info.lmpVersion = v.lmpVersion
            info.manufacturer = v.companyIdentifier
            info.lmpSubversion = v.lmpSubversion
            return send(ReadBDADDRCommand())
        case .readBDADDR:
            info.address = try decode(try required(result), HCIReadBDADDRReturn.self).bdAddr
            return send(ReadLocalSupportedCommandsCommand())
        case .readSupportedCommands:
            if case .success(let r) = result,
               let v = try? r.decode(as: HCIReadLocalSupportedCommandsReturn.self) {
                info.supportedCommands = v.supportedCommands
            }
            return send(ReadLocalSupportedFeaturesCommand())
        case .readFeatures:
            if case .success(let r) = result,
               let v = try? r.decode(as: HCIReadLocalSupportedFeaturesReturn.self) {
                info.features = v.lmpFeatures
            }
            return send(LEReadLocalSupportedFeaturesCommand())
        case .leReadFeatures:
            info.leFeatures = try decode(try required(result, notSupportedHint: true), LEReadLocalSupportedFeaturesReturn.self).leFeatures
            if info.supports(ControllerInfo.CommandBit.leReadBufferSizeV2) {
                return send(LEReadBufferSizeV2Command(), timeout: probeTimeout)
            }
            return send(LEReadBufferSizeV1Command())
        case .leReadBufferSizeV2:
            guard case .success(let r) = result, let v = try? r.decode(as: LEReadBufferSizeV2Return.self) else {
                return send(LEReadBufferSizeV1Command())
            }
            info.aclBufferLength = v.leACLDataPacketLength
            info.aclBufferCount = UInt16(v.totalNumLEACLDataPackets)
            if v.isoDataPacketLength > 0, v.totalNumISODataPackets > 0 {
                info.isoBuffer = ISOBuffer(length: v.isoDataPacketLength, count: v.totalNumISODataPackets)
            }
            info.bufferSizeSource = 2
            return afterLEBufferSize()
        case .leReadBufferSizeV1:
            let v = try decode(try required(result), LEReadBufferSizeV1Return.self)
            info.aclBufferLength = v.leACLDataPacketLength
            info.aclBufferCount = UInt16(v.totalNumLEACLDataPackets)
            info.bufferSizeSource = 1
            return afterLEBufferSize()
        case .readBufferSize:
            let v = try decode(try required(result), HCIReadBufferSizeReturn.self)
            // Shared buffers too small to carry an LE packet (27 bytes, Core Vol 6 Part B
            // §2.4) or none at all: nothing could be sent.
            guard v.aclDataPacketLength >= 27, v.totalNumACLDataPackets > 0 else {
                throw HostError(.notSupported, "the controller reports no usable ACL buffers (\(v.totalNumACLDataPackets) of \(v.aclDataPacketLength) bytes)")
            }
            info.aclBufferLength = v.aclDataPacketLength
            info.aclBufferCount = v.totalNumACLDataPackets
            info.bufferSizeSource = 0
            return afterBuffers()
        case .leReadMaximumAdvertisingDataLength:
            guard case .success(let r) = result, let v = try? r.decode(as: LEReadMaximumAdvertisingDataLengthReturn.self),
                  v.maxAdvertisingDataLength >= 31 else {
                return linkDefaults()
            }
            // At most 1650 bytes fit an advertising chain (Core Vol 4 Part E §7.8.57).
            info.maximumAdvertisingDataLength = min(Int(v.maxAdvertisingDataLength), AdvertisingData.extendedMaximumLength)
            return send(LEReadNumberOfSupportedAdvertisingSetsCommand())
        case .leReadNumberOfSupportedAdvertisingSets:
            if case .success(let r) = result, let v = try? r.decode(as: LEReadNumberOfSupportedAdvertisingSetsReturn.self),
               v.numSupportedAdvertisingSets > 0 {
                info.advertisingSets = Int(v.numSupportedAdvertisingSets)
            } else {
                info.maximumAdvertisingDataLength = AdvertisingData.legacyMaximumLength
            }
            return linkDefaults()
        case .leReadMaximumDataLength:
            guard case .success(let r) = result, let v = try? r.decode(as: LEReadMaximumDataLengthReturn.self),
                  v.supportedMaxTxOctets >= 27, v.supportedMaxRxOctets >= 27 else {
                return phyDefaults()
            }
            info.maximumDataLength = LEDataLength(txOctets: min(v.supportedMaxTxOctets, 251), txTime: min(v.supportedMaxTxTime, 17040),
                                                  rxOctets: min(v.supportedMaxRxOctets, 251), rxTime: min(v.supportedMaxRxTime, 17040))
            return send(LEWriteSuggestedDefaultDataLengthCommand(suggestedMaxTxOctets: min(v.supportedMaxTxOctets, 251),
                                                                 suggestedMaxTxTime: min(v.supportedMaxTxTime, 17040)))
        case .leWriteSuggestedDefaultDataLength:
            return phyDefaults()
        case .leSetDefaultPHY:
            return send(SetEventMaskCommand(eventMask: Self.eventMask))
        case .setEventMask:
            _ = try required(result)
            return send(LESetEventMaskCommand(leEventMask: Self.leEventMask))
        case .leSetEventMask:
            _ = try required(result)
            step = .done
            return .finished(info)
        case .done:
            return .failed(HostError(.cancelled, "controller initialisation already finished"))
        }
    }

    private mutating func afterLEBufferSize() -> Action {
        // No LE buffers of their own (0), or a length no LE packet fits: the shared ones.
        if info.aclBufferLength < 27 || info.aclBufferCount == 0 {
            return send(ReadBufferSizeCommand())
        }
        return afterBuffers()
    }

    private mutating func afterBuffers() -> Action {
        if info.supportsExtendedAdvertising {
            return send(LEReadMaximumAdvertisingDataLengthCommand())
        }
        return linkDefaults()
    }

    /// What new links start with: the longest data length, then every PHY allowed.
    private mutating func linkDefaults() -> Action {
        if info.leFeatures.contains(.leDataPacketLengthExtension) { return send(LEReadMaximumDataLengthCommand()) }
        return phyDefaults()
    }

    private mutating func phyDefaults() -> Action {
        let phys = info.supportedPHYs
        if phys != .le1M { return send(LESetDefaultPHYCommand(txPHYs: phys, rxPHYs: phys)) }
        return send(SetEventMaskCommand(eventMask: Self.eventMask))
    }

    private func required(_ result: Result<CommandReturn, HostError>, notSupportedHint: Bool = false) throws(HostError) -> CommandReturn {
        switch result {
        case .success(let r): return r
        case .failure(var e):
            if case .commandFailed(.unknownHCICommand) = e.kind, notSupportedHint {
                e = HostError(.notSupported, "the controller does not support Bluetooth Low Energy (\(e.message))", opcode: e.opcode)
            }
            e.message = "controller initialisation failed: " + e.message
            throw e
        }
    }

    private func decode<T: HCICommandReturnParameters>(_ r: CommandReturn, _ type: T.Type) throws(HostError) -> T {
        do throws(WireError) {
            return try r.decode(as: type)
        } catch {
            throw HostError(.malformedPacket(error),
                            "controller initialisation failed: malformed answer to \(HostError.commandName(r.opcode)): \(error)",
                            opcode: r.opcode)
        }
    }

    private mutating func send<C: HCICommandEncodable>(_ command: C, timeout: UInt64? = nil) -> Action {
        step = Self.step(for: C.opcode)
        do throws(WireError) {
            return .send(Command(packet: try command.encodedH4(), opcode: C.opcode, timeout: timeout))
        } catch {
            step = .done
            return .failed(HostError(.malformedPacket(error), "cannot encode \(HostError.commandName(C.opcode)): \(error)"))
        }
    }

    private static func step(for opcode: HCIOpcode) -> Step {
        switch opcode {
        case .reset: .reset
        case .readLocalVersionInformation: .readLocalVersion
        case .readBDADDR: .readBDADDR
        case .readLocalSupportedCommands: .readSupportedCommands
        case .readLocalSupportedFeatures: .readFeatures
        case .leReadLocalSupportedFeatures: .leReadFeatures
        case .leReadBufferSizeV2: .leReadBufferSizeV2
        case .leReadBufferSizeV1: .leReadBufferSizeV1
        case .readBufferSize: .readBufferSize
        case .leReadMaximumAdvertisingDataLength: .leReadMaximumAdvertisingDataLength
        case .leReadNumberOfSupportedAdvertisingSets: .leReadNumberOfSupportedAdvertisingSets
        case .leReadMaximumDataLength: .leReadMaximumDataLength
        case .leWriteSuggestedDefaultDataLength: .leWriteSuggestedDefaultDataLength
        case .leSetDefaultPHY: .leSetDefaultPHY
        case .setEventMask: .setEventMask
        case .leSetEventMask: .leSetEventMask
        default: .done
        }
    }
}

/// HCI_Read_Buffer_Size (Core Vol 4 Part E §7.4.5). Not in BluetoothWire's command set;
/// defined here for the init fallback when the controller shares BR/EDR buffers with LE.
public struct ReadBufferSizeCommand: HCIParameterlessCommand {
    /// HCI_Read_Buffer_Size (0x1005).
    public static let opcode = HCIOpcode.readBufferSize
    /// The command (no parameters).
    public init() {}
}
