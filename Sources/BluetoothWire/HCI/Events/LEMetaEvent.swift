/// HCI_LE_Meta event subevents (Core Vol 4 Part E §7.7.65). Views inside point into the
/// parsed buffer and are valid only while it is alive.
public enum LEMetaEvent {
    case connectionComplete(LEConnectionComplete)
    case advertisingReport(LEAdvertisingReportEvent)
    case connectionUpdateComplete(LEConnectionUpdateComplete)
    case readRemoteFeaturesComplete(LEReadRemoteFeaturesComplete)
    case longTermKeyRequest(LELongTermKeyRequest)
    case remoteConnectionParameterRequest(LERemoteConnectionParameterRequest)
    case dataLengthChange(LEDataLengthChange)
    /// LE Enhanced Connection Complete v1 (0x0A) or v2 (0x29).
    case enhancedConnectionComplete(LEEnhancedConnectionComplete)
    case directedAdvertisingReport(LEDirectedAdvertisingReportEvent)
    case phyUpdateComplete(LEPHYUpdateComplete)
    case extendedAdvertisingReport(LEExtendedAdvertisingReportEvent)
    case scanTimeout(LEScanTimeout)
    case advertisingSetTerminated(LEAdvertisingSetTerminated)
    case channelSelectionAlgorithm(LEChannelSelectionAlgorithm)
    /// Any other subevent: its code and the bytes after Subevent_Code.
    case unknown(LEMetaSubeventCode, UnsafeRawBufferPointer)

    /// Parses the LE Meta event parameters (Subevent_Code first). The caller checks the end.
    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let sub = try r.u8("Subevent_Code")
        switch sub {
        case 0x02: self = .advertisingReport(try LEAdvertisingReportEvent(parameters: &r))
        case 0x0D: self = .extendedAdvertisingReport(try LEExtendedAdvertisingReportEvent(parameters: &r))
        case 0x01: self = .connectionComplete(try LEConnectionComplete(parameters: &r))
        case 0x03: self = .connectionUpdateComplete(try LEConnectionUpdateComplete(parameters: &r))
        case 0x04: self = .readRemoteFeaturesComplete(try LEReadRemoteFeaturesComplete(parameters: &r))
        case 0x05: self = .longTermKeyRequest(try LELongTermKeyRequest(parameters: &r))
        case 0x06: self = .remoteConnectionParameterRequest(try LERemoteConnectionParameterRequest(parameters: &r))
        case 0x07: self = .dataLengthChange(try LEDataLengthChange(parameters: &r))
        case 0x0A: self = .enhancedConnectionComplete(try LEEnhancedConnectionComplete(parameters: &r, v2: false))
        case 0x29: self = .enhancedConnectionComplete(try LEEnhancedConnectionComplete(parameters: &r, v2: true))
        case 0x0B: self = .directedAdvertisingReport(try LEDirectedAdvertisingReportEvent(parameters: &r))
        case 0x0C: self = .phyUpdateComplete(try LEPHYUpdateComplete(parameters: &r))
        case 0x11: self = .scanTimeout(LEScanTimeout())
        case 0x12: self = .advertisingSetTerminated(try LEAdvertisingSetTerminated(parameters: &r))
        case 0x14: self = .channelSelectionAlgorithm(try LEChannelSelectionAlgorithm(parameters: &r))
        default: self = .unknown(LEMetaSubeventCode(rawValue: sub), r.rest())
        }
    }

    /// The LE Meta event subevent code.
    /// (Each case's own, not through ``payload``: boxing the parameters in an existential
    /// allocated once per event, for every advertising report a replay describes.)
    public var subeventCode: LEMetaSubeventCode {
        switch self {
        case .connectionComplete(let e): e.subeventCode
        case .advertisingReport(let e): e.subeventCode
        case .connectionUpdateComplete(let e): e.subeventCode
        case .readRemoteFeaturesComplete(let e): e.subeventCode
        case .longTermKeyRequest(let e): e.subeventCode
        case .remoteConnectionParameterRequest(let e): e.subeventCode
        case .dataLengthChange(let e): e.subeventCode
        case .enhancedConnectionComplete(let e): e.subeventCode
        case .directedAdvertisingReport(let e): e.subeventCode
        case .phyUpdateComplete(let e): e.subeventCode
        case .extendedAdvertisingReport(let e): e.subeventCode
        case .scanTimeout(let e): e.subeventCode
        case .advertisingSetTerminated(let e): e.subeventCode
        case .channelSelectionAlgorithm(let e): e.subeventCode
        case .unknown(let c, _): c
        }
    }

    /// The subevent as its encodable parameters type (nil for `.unknown`).
    public var payload: (any LEMetaEventParameters)? {
        switch self {
        case .connectionComplete(let e): e
        case .advertisingReport(let e): e
        case .connectionUpdateComplete(let e): e
        case .readRemoteFeaturesComplete(let e): e
        case .longTermKeyRequest(let e): e
        case .remoteConnectionParameterRequest(let e): e
        case .dataLengthChange(let e): e
        case .enhancedConnectionComplete(let e): e
        case .directedAdvertisingReport(let e): e
        case .phyUpdateComplete(let e): e
        case .extendedAdvertisingReport(let e): e
        case .scanTimeout(let e): e
        case .advertisingSetTerminated(let e): e
        case .channelSelectionAlgorithm(let e): e
        case .unknown: nil
        }
    }
}

extension LEMetaEvent: WireEncodable, FieldDescribable {
    public var encodedLength: Int {
        if case .unknown(_, let b) = self { return 3 &+ b.count }
        return payload?.encodedLength ?? 0
    }

    /// Writes the whole HCI_LE_Meta event (Event_Code 0x3E, length, Subevent_Code, parameters).
    public func encode(into w: inout ByteWriter) throws(WireError) {
        if case .unknown(let c, let b) = self {
            guard b.count <= 254 else {
                throw WireError(.valueOutOfRange, at: w.count, "event parameters longer than 255 bytes")
            }
            try w.u8(HCIEventCode.leMeta.rawValue)
            try w.u8(UInt8(1 &+ b.count))
            try w.u8(c.rawValue)
            try w.bytes(b)
            return
        }
        try payload?.encode(into: &w)
    }

    /// Each case's own title (no existential box; see ``subeventCode``).
    public var fieldTitle: String {
        switch self {
        case .connectionComplete(let e): e.fieldTitle
        case .advertisingReport(let e): e.fieldTitle
        case .connectionUpdateComplete(let e): e.fieldTitle
        case .readRemoteFeaturesComplete(let e): e.fieldTitle
        case .longTermKeyRequest(let e): e.fieldTitle
        case .remoteConnectionParameterRequest(let e): e.fieldTitle
        case .dataLengthChange(let e): e.fieldTitle
        case .enhancedConnectionComplete(let e): e.fieldTitle
        case .directedAdvertisingReport(let e): e.fieldTitle
        case .phyUpdateComplete(let e): e.fieldTitle
        case .extendedAdvertisingReport(let e): e.fieldTitle
        case .scanTimeout(let e): e.fieldTitle
        case .advertisingSetTerminated(let e): e.fieldTitle
        case .channelSelectionAlgorithm(let e): e.fieldTitle
        case .unknown(let c, _): c.name ?? "HCI_LE_Meta subevent 0x\(Hex.pad(c.rawValue, 2))"
        }
    }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { FieldTree.build { describeAny(into: &$0) } }

    /// Writes `subevent_code` and the subevent's fields; the advertising reports straight,
    /// the rest from their field lists.
    public func describeAny<S: FieldSink & ~Copyable>(into s: inout S) {
        let code = subeventCode
        s.named("subevent_code", UInt64(code.rawValue), code.name ?? "Reserved")
        switch self {
        case .unknown(_, let b): s.bytes("parameters", b)
        case .advertisingReport(let e): e.describe(into: &s)
        case .extendedAdvertisingReport(let e): e.describe(into: &s)
        default: s.fields(payload?.fields ?? [])
        }
    }

    /// ``describe(into:)`` specialized for the text and JSON writer.
    public func describe(into w: inout FieldWriter) { describeAny(into: &w) }
}

// MARK: - Connection events

/// HCI_LE_Connection_Complete (Core Vol 4 Part E §7.7.65.1).
public struct LEConnectionComplete: LEMetaEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Our role on the link.
    public var role: LEConnectionRole
    /// The peer's address.
    public var peerAddress: LEAddress
    /// Connection_Interval in units of 1.25 ms.
    public var connectionInterval: UInt16
    /// Peripheral latency, in connection events.
    public var peripheralLatency: UInt16
    /// Supervision_Timeout in units of 10 ms.
    public var supervisionTimeout: UInt16
    /// Central_Clock_Accuracy.
    public var centralClockAccuracy: LEClockAccuracy

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, role: LEConnectionRole, peerAddress: LEAddress,
                connectionInterval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16,
                centralClockAccuracy: LEClockAccuracy) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.role = role
        self.peerAddress = peerAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let role = try r.u8("Role")
        let t = try r.u8("Peer_Address_Type")
        let a = try r.u48("Peer_Address")
        let i = try r.u16("Connection_Interval")
        let l = try r.u16("Peripheral_Latency")
        let to = try r.u16("Supervision_Timeout")
        let ca = try r.u8("Central_Clock_Accuracy")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, role: LEConnectionRole(rawValue: role),
                  peerAddress: LEAddress(BluetoothAddress(rawValue: a), type: LEAddressType(rawValue: t)),
                  connectionInterval: i, peripheralLatency: l, supervisionTimeout: to,
                  centralClockAccuracy: LEClockAccuracy(rawValue: ca))
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .connectionComplete }
    public var subeventParameterLength: Int { 18 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(role.rawValue)
        try w.u8(peerAddress.type.rawValue)
        try peerAddress.address.write(&w)
        try w.u16(connectionInterval)
        try w.u16(peripheralLatency)
        try w.u16(supervisionTimeout)
        try w.u8(centralClockAccuracy.rawValue)
    }

    public var fieldTitle: String { "HCI_LE_Connection_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("role", .code(role, role.name)),
         Field("peer_address_type", .addressType(peerAddress.type)),
         Field("peer_address", .address(peerAddress.address)),
         Field("connection_interval", .u(connectionInterval)),
         Field("peripheral_latency", .u(peripheralLatency)),
         Field("supervision_timeout", .u(supervisionTimeout)),
         Field("central_clock_accuracy", .code(centralClockAccuracy, centralClockAccuracy.name))]
    }
}

/// HCI_LE_Enhanced_Connection_Complete [v1] (0x0A) and [v2] (0x29) (Core Vol 4 Part E §7.7.65.10).
/// `v2` holds the fields v2 appends (Advertising_Handle, Sync_Handle).
public struct LEEnhancedConnectionComplete: LEMetaEventParameters, Hashable, Sendable {
    /// The fields [v2] adds (advertising handle, sync handle).
    public struct V2Fields: Hashable, Sendable {
        /// Advertising set that created the connection (0xFF: none).
        public var advertisingHandle: UInt8
        /// Periodic advertising train of a PAwR connection (0xFFFF: none).
        public var syncHandle: UInt16
        /// The event parameters as given.
        @inlinable public init(advertisingHandle: UInt8, syncHandle: UInt16) {
            self.advertisingHandle = advertisingHandle
            self.syncHandle = syncHandle
        }
    }

    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Our role on the link.
    public var role: LEConnectionRole
    /// The peer's address.
    public var peerAddress: LEAddress
    /// Local_Resolvable_Private_Address (zero when not used).
    public var localResolvablePrivateAddress: BluetoothAddress
    /// Peer_Resolvable_Private_Address (zero when not used).
    public var peerResolvablePrivateAddress: BluetoothAddress
    /// Connection_Interval.
    public var connectionInterval: UInt16
    /// Peripheral latency, in connection events.
    public var peripheralLatency: UInt16
    /// Supervision timeout, units of 10 ms.
    public var supervisionTimeout: UInt16
    /// Central_Clock_Accuracy.
    public var centralClockAccuracy: LEClockAccuracy
    /// Present exactly for v2.
    public var v2: V2Fields?

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, role: LEConnectionRole, peerAddress: LEAddress,
                localResolvablePrivateAddress: BluetoothAddress, peerResolvablePrivateAddress: BluetoothAddress,
                connectionInterval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16,
                centralClockAccuracy: LEClockAccuracy, v2: V2Fields? = nil) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.role = role
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.v2 = v2
    }

    @inlinable
    init(parameters r: inout ByteReader, v2 isV2: Bool) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let role = try r.u8("Role")
        let t = try r.u8("Peer_Address_Type")
        let a = try r.u48("Peer_Address")
        let lrpa = try r.u48("Local_Resolvable_Private_Address")
        let prpa = try r.u48("Peer_Resolvable_Private_Address")
        let i = try r.u16("Connection_Interval")
        let l = try r.u16("Peripheral_Latency")
        let to = try r.u16("Supervision_Timeout")
        let ca = try r.u8("Central_Clock_Accuracy")
        var extra: V2Fields? = nil
        if isV2 {
            let ah = try r.u8("Advertising_Handle")
            let sh = try r.u16("Sync_Handle")
            extra = V2Fields(advertisingHandle: ah, syncHandle: sh)
        }
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, role: LEConnectionRole(rawValue: role),
                  peerAddress: LEAddress(BluetoothAddress(rawValue: a), type: LEAddressType(rawValue: t)),
                  localResolvablePrivateAddress: BluetoothAddress(rawValue: lrpa),
                  peerResolvablePrivateAddress: BluetoothAddress(rawValue: prpa),
                  connectionInterval: i, peripheralLatency: l, supervisionTimeout: to,
                  centralClockAccuracy: LEClockAccuracy(rawValue: ca), v2: extra)
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { v2 == nil ? .enhancedConnectionCompleteV1 : .enhancedConnectionCompleteV2 }
    public var subeventParameterLength: Int { v2 == nil ? 30 : 33 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(role.rawValue)
        try w.u8(peerAddress.type.rawValue)
        try peerAddress.address.write(&w)
        try localResolvablePrivateAddress.write(&w)
        try peerResolvablePrivateAddress.write(&w)
        try w.u16(connectionInterval)
        try w.u16(peripheralLatency)
        try w.u16(supervisionTimeout)
        try w.u8(centralClockAccuracy.rawValue)
        if let v2 {
            try w.u8(v2.advertisingHandle)
            try w.u16(v2.syncHandle)
        }
    }

    public var fieldTitle: String {
        v2 == nil ? "HCI_LE_Enhanced_Connection_Complete [v1]" : "HCI_LE_Enhanced_Connection_Complete [v2]"
    }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        var f = [Field("status", .status(status)),
                 Field("connection_handle", .u(connectionHandle)),
                 Field("role", .code(role, role.name)),
                 Field("peer_address_type", .addressType(peerAddress.type)),
                 Field("peer_address", .address(peerAddress.address)),
                 Field("local_resolvable_private_address", .address(localResolvablePrivateAddress)),
                 Field("peer_resolvable_private_address", .address(peerResolvablePrivateAddress)),
                 Field("connection_interval", .u(connectionInterval)),
                 Field("peripheral_latency", .u(peripheralLatency)),
                 Field("supervision_timeout", .u(supervisionTimeout)),
                 Field("central_clock_accuracy", .code(centralClockAccuracy, centralClockAccuracy.name))]
        if let v2 {
            f.append(Field("advertising_handle", .u(v2.advertisingHandle)))
            f.append(Field("sync_handle", .u(v2.syncHandle)))
        }
        return f
    }
}

/// HCI_LE_Connection_Update_Complete (Core Vol 4 Part E §7.7.65.3).
public struct LEConnectionUpdateComplete: LEMetaEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Connection_Interval.
    public var connectionInterval: UInt16
    /// Peripheral latency, in connection events.
    public var peripheralLatency: UInt16
    /// Supervision timeout, units of 10 ms.
    public var supervisionTimeout: UInt16

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, connectionInterval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let i = try r.u16("Connection_Interval")
        let l = try r.u16("Peripheral_Latency")
        let t = try r.u16("Supervision_Timeout")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, connectionInterval: i, peripheralLatency: l, supervisionTimeout: t)
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .connectionUpdateComplete }
    public var subeventParameterLength: Int { 9 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u16(connectionInterval)
        try w.u16(peripheralLatency)
        try w.u16(supervisionTimeout)
    }

    public var fieldTitle: String { "HCI_LE_Connection_Update_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("connection_interval", .u(connectionInterval)),
         Field("peripheral_latency", .u(peripheralLatency)),
         Field("supervision_timeout", .u(supervisionTimeout))]
    }
}

/// HCI_LE_Read_Remote_Features_Complete (Core Vol 4 Part E §7.7.65.4).
public struct LEReadRemoteFeaturesComplete: LEMetaEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The LE features.
    public var leFeatures: LEFeatures

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, leFeatures: LEFeatures) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.leFeatures = leFeatures
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let f = try r.u64("LE_Features")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, leFeatures: LEFeatures(rawValue: f))
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .readRemoteFeaturesComplete }
    public var subeventParameterLength: Int { 11 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u64(leFeatures.rawValue)
    }

    public var fieldTitle: String { "HCI_LE_Read_Remote_Features_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("le_features", leFeatures.fieldValue)]
    }
}

/// HCI_LE_Long_Term_Key_Request (Core Vol 4 Part E §7.7.65.5).
public struct LELongTermKeyRequest: LEMetaEventParameters, Hashable, Sendable {
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Random_Number (Rand), 0 for LE Secure Connections.
    public var randomNumber: UInt64
    /// Encrypted_Diversifier (EDIV), 0 for LE Secure Connections.
    public var encryptedDiversifier: UInt16

    /// The event parameters as given.
    @inlinable
    public init(connectionHandle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16) {
        self.connectionHandle = connectionHandle
        self.randomNumber = randomNumber
        self.encryptedDiversifier = encryptedDiversifier
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let h = try r.u16("Connection_Handle")
        let rand = try r.u64("Random_Number")
        let ediv = try r.u16("Encrypted_Diversifier")
        self.init(connectionHandle: h, randomNumber: rand, encryptedDiversifier: ediv)
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .longTermKeyRequest }
    public var subeventParameterLength: Int { 12 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(connectionHandle)
        try w.u64(randomNumber)
        try w.u16(encryptedDiversifier)
    }

    public var fieldTitle: String { "HCI_LE_Long_Term_Key_Request" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("connection_handle", .u(connectionHandle)),
         Field("random_number", .text("0x" + Hex.pad(randomNumber, 16))),
         Field("encrypted_diversifier", .u(encryptedDiversifier))]
    }
}

/// HCI_LE_Remote_Connection_Parameter_Request (Core Vol 4 Part E §7.7.65.6).
public struct LERemoteConnectionParameterRequest: LEMetaEventParameters, Hashable, Sendable {
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The smallest connection interval, units of 1.25 ms.
    public var intervalMin: UInt16
    /// The largest connection interval, units of 1.25 ms.
    public var intervalMax: UInt16
    /// Max_Latency.
    public var maxLatency: UInt16
    /// Supervision_Timeout, units of 10 ms.
    public var timeout: UInt16

    /// The event parameters as given.
    @inlinable
    public init(connectionHandle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16, timeout: UInt16) {
        self.connectionHandle = connectionHandle
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.timeout = timeout
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let h = try r.u16("Connection_Handle")
        let mn = try r.u16("Interval_Min")
        let mx = try r.u16("Interval_Max")
        let l = try r.u16("Max_Latency")
        let t = try r.u16("Timeout")
        self.init(connectionHandle: h, intervalMin: mn, intervalMax: mx, maxLatency: l, timeout: t)
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .remoteConnectionParameterRequest }
    public var subeventParameterLength: Int { 10 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(connectionHandle)
        try w.u16(intervalMin)
        try w.u16(intervalMax)
        try w.u16(maxLatency)
        try w.u16(timeout)
    }

    public var fieldTitle: String { "HCI_LE_Remote_Connection_Parameter_Request" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("connection_handle", .u(connectionHandle)),
         Field("interval_min", .u(intervalMin)),
         Field("interval_max", .u(intervalMax)),
         Field("max_latency", .u(maxLatency)),
         Field("timeout", .u(timeout))]
    }
}

/// HCI_LE_Data_Length_Change (Core Vol 4 Part E §7.7.65.7).
public struct LEDataLengthChange: LEMetaEventParameters, Hashable, Sendable {
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Max_TX_Octets.
    public var maxTxOctets: UInt16
    /// Max_TX_Time.
    public var maxTxTime: UInt16
    /// Max_RX_Octets.
    public var maxRxOctets: UInt16
    /// Max_RX_Time.
    public var maxRxTime: UInt16

    /// The event parameters as given.
    @inlinable
    public init(connectionHandle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16) {
        self.connectionHandle = connectionHandle
        self.maxTxOctets = maxTxOctets
        self.maxTxTime = maxTxTime
        self.maxRxOctets = maxRxOctets
        self.maxRxTime = maxRxTime
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let h = try r.u16("Connection_Handle")
        let to = try r.u16("Max_TX_Octets")
        let tt = try r.u16("Max_TX_Time")
        let ro = try r.u16("Max_RX_Octets")
        let rt = try r.u16("Max_RX_Time")
        self.init(connectionHandle: h, maxTxOctets: to, maxTxTime: tt, maxRxOctets: ro, maxRxTime: rt)
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .dataLengthChange }
    public var subeventParameterLength: Int { 10 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(connectionHandle)
        try w.u16(maxTxOctets)
        try w.u16(maxTxTime)
        try w.u16(maxRxOctets)
        try w.u16(maxRxTime)
    }

    public var fieldTitle: String { "HCI_LE_Data_Length_Change" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("connection_handle", .u(connectionHandle)),
         Field("max_tx_octets", .u(maxTxOctets)),
         Field("max_tx_time", .u(maxTxTime)),
         Field("max_rx_octets", .u(maxRxOctets)),
         Field("max_rx_time", .u(maxRxTime))]
    }
}

/// HCI_LE_PHY_Update_Complete (Core Vol 4 Part E §7.7.65.12).
public struct LEPHYUpdateComplete: LEMetaEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// The transmitter PHY.
    public var txPHY: LEPHY
    /// The receiver PHY.
    public var rxPHY: LEPHY

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, txPHY: LEPHY, rxPHY: LEPHY) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.txPHY = txPHY
        self.rxPHY = rxPHY
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let tx = try r.u8("TX_PHY")
        let rx = try r.u8("RX_PHY")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, txPHY: LEPHY(rawValue: tx), rxPHY: LEPHY(rawValue: rx))
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .phyUpdateComplete }
    public var subeventParameterLength: Int { 5 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(txPHY.rawValue)
        try w.u8(rxPHY.rawValue)
    }

    public var fieldTitle: String { "HCI_LE_PHY_Update_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("tx_phy", .code(txPHY, txPHY.name)),
         Field("rx_phy", .code(rxPHY, rxPHY.name))]
    }
}

/// HCI_LE_Scan_Timeout (Core Vol 4 Part E §7.7.65.17): no parameters.
public struct LEScanTimeout: LEMetaEventParameters, Hashable, Sendable {
    /// The event (it has no parameters).
    @inlinable public init() {}
    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .scanTimeout }
    public var subeventParameterLength: Int { 0 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {}
    public var fieldTitle: String { "HCI_LE_Scan_Timeout" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [] }
}

/// HCI_LE_Advertising_Set_Terminated (Core Vol 4 Part E §7.7.65.18).
public struct LEAdvertisingSetTerminated: LEMetaEventParameters, Hashable, Sendable {
    /// Status: `.success` when a central connected, else why advertising ended (timeout, events limit).
    public var status: HCIErrorCode
    /// Advertising_Handle: the advertising set.
    public var advertisingHandle: UInt8
    /// Valid only when `status` is success (the set ended because a connection was created).
    public var connectionHandle: UInt16
    /// Num_Completed_Extended_Advertising_Events.
    public var numCompletedExtendedAdvertisingEvents: UInt8

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, advertisingHandle: UInt8, connectionHandle: UInt16, numCompletedExtendedAdvertisingEvents: UInt8) {
        self.status = status
        self.advertisingHandle = advertisingHandle
        self.connectionHandle = connectionHandle
        self.numCompletedExtendedAdvertisingEvents = numCompletedExtendedAdvertisingEvents
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let a = try r.u8("Advertising_Handle")
        let h = try r.u16("Connection_Handle")
        let n = try r.u8("Num_Completed_Extended_Advertising_Events")
        self.init(status: HCIErrorCode(rawValue: s), advertisingHandle: a, connectionHandle: h, numCompletedExtendedAdvertisingEvents: n)
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .advertisingSetTerminated }
    public var subeventParameterLength: Int { 5 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u8(advertisingHandle)
        try w.u16(connectionHandle)
        try w.u8(numCompletedExtendedAdvertisingEvents)
    }

    public var fieldTitle: String { "HCI_LE_Advertising_Set_Terminated" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("advertising_handle", .u(advertisingHandle)),
         Field("connection_handle", .u(connectionHandle)),
         Field("num_completed_extended_advertising_events", .u(numCompletedExtendedAdvertisingEvents))]
    }
}

/// HCI_LE_Channel_Selection_Algorithm (Core Vol 4 Part E §7.7.65.20).
public struct LEChannelSelectionAlgorithm: LEMetaEventParameters, Hashable, Sendable {
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Channel_Selection_Algorithm.
    public var channelSelectionAlgorithm: LEChannelSelectionAlgorithmValue

    /// The event parameters as given.
    @inlinable
    public init(connectionHandle: UInt16, channelSelectionAlgorithm: LEChannelSelectionAlgorithmValue) {
        self.connectionHandle = connectionHandle
        self.channelSelectionAlgorithm = channelSelectionAlgorithm
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let h = try r.u16("Connection_Handle")
        let a = try r.u8("Channel_Selection_Algorithm")
        self.init(connectionHandle: h, channelSelectionAlgorithm: LEChannelSelectionAlgorithmValue(rawValue: a))
    }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .channelSelectionAlgorithm }
    public var subeventParameterLength: Int { 3 }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u16(connectionHandle)
        try w.u8(channelSelectionAlgorithm.rawValue)
    }

    public var fieldTitle: String { "HCI_LE_Channel_Selection_Algorithm" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("connection_handle", .u(connectionHandle)),
         Field("channel_selection_algorithm", .code(channelSelectionAlgorithm, channelSelectionAlgorithm.name))]
    }
}
