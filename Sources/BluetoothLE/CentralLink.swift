import BluetoothSecurity

// The application layer's central link: connect, encrypt with a stored bond, ask for
// connection parameters. The one policy for the CLI commands, the gateway and CentralManager.

/// Connection parameters to ask for once the link is up (LE Connection Update, Core Vol 4
/// Part E §7.8.18), in the spec's units; what is unset keeps the link's value.
public struct ConnectionParameterWish: Sendable, Hashable {
    /// Connection interval range, 1.25 ms units (6 ... 3200).
    public var interval: ClosedRange<UInt16>?
    /// Peripheral latency in connection events (0 ... 499).
    public var latency: UInt16?
    /// Supervision timeout, 10 ms units (10 ... 3200).
    public var supervisionTimeout: UInt16?

    /// A wish; with no arguments, the link's parameters as they are.
    public init(interval: ClosedRange<UInt16>? = nil, latency: UInt16? = nil, supervisionTimeout: UInt16? = nil) {
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    /// The request for a link now at `current`. An unset timeout that the new interval and
    /// latency would make invalid becomes twice the least they allow (timeout × 10 ms >
    /// (1 + latency) × interval × 2.5 ms, Core Vol 6 Part B §4.5.2).
    public func request(from current: LELinkState) -> L2CAPConnectionParameters {
        let range = interval ?? current.interval ... current.interval
        let lat = latency ?? current.latency
        var p = L2CAPConnectionParameters(intervalMin: range.lowerBound, intervalMax: range.upperBound,
                                          peripheralLatency: lat, timeoutMultiplier: supervisionTimeout ?? current.supervisionTimeout)
        if supervisionTimeout == nil && !LEConnectionManager.isAcceptable(p) {
            let least = (1 + UInt32(lat)) * UInt32(range.upperBound) / 4 + 1
            p.timeoutMultiplier = UInt16(min(3200, max(10, least * 2)))
        }
        return p
    }
}

/// Which PHY a central link asks for once it is up (LE Set PHY, Core Vol 4 Part E §7.8.49).
public enum PHYPreference: String, Sendable, Hashable, CaseIterable {
    /// LE 2M where both controllers have it (twice LE 1M's rate), else LE 1M.
    case auto
    /// LE 1M, as every link starts.
    case le1M = "1m"
    /// LE 2M; a controller or device without it is said, and the link stays on LE 1M.
    case le2M = "2m"
    /// LE Coded (long range, the controller's choice of S=2 or S=8).
    case coded
}

/// What asking for a link's PHY or data length came to.
public enum LinkRequestOutcome: Sendable, Equatable {
    /// Not asked for (the preference, or nothing to gain).
    case notAsked
    /// Done: the link as it is now.
    case done(LELinkState)
    /// Refused or failed (the link goes on as it was): why.
    case refused(String)
}

/// How a central link is set up.
public struct ConnectSettings: Sendable {
    /// Give up connecting after this long.
    public var timeout: Duration
    /// Encrypt at once with a stored bond's key, as BlueZ does (many devices send nothing
    /// until then). False only for a link that must stay unencrypted (Signed Writes).
    public var encryptWithBond: Bool
    /// Connection parameters to ask for once connected (nil: keep the link's).
    public var parameters: ConnectionParameterWish?
    /// The PHY to ask for once connected.
    public var phy: PHYPreference
    /// Ask for the longest data length both controllers take (LE Set Data Length) once
    /// connected, where the controller has Data Length Extension.
    public var longestDataLength: Bool

    /// The defaults: 10 s, encrypted with the bond, the link's parameters, LE 2M where
    /// both have it, the longest data length.
    public init(timeout: Duration = .seconds(10), encryptWithBond: Bool = true, parameters: ConnectionParameterWish? = nil,
                phy: PHYPreference = .auto, longestDataLength: Bool = true) {
        self.timeout = timeout
        self.encryptWithBond = encryptWithBond
        self.parameters = parameters
        self.phy = phy
        self.longestDataLength = longestDataLength
    }
}

/// A link set up by ``open(on:to:_:)``, with what happened on the way.
public struct CentralLink: Sendable {
    /// The link.
    public let connection: LEConnection
    /// The security the stored bond's key gave the link (nil: no bond with a key, or not asked for).
    public let bondSecurity: LinkSecurity?
    /// The parameters after the update asked for (nil: none asked for).
    public let updatedParameters: LELinkState?
    /// What asking for the longest data length did.
    public let dataLength: LinkRequestOutcome
    /// What asking for the PHY did.
    public let phy: LinkRequestOutcome

    /// Connects to `address` and sets the link up. A bonded device is encrypted with its
    /// stored key at once; when it refuses (it forgot the bond, or it is not the device that
    /// bonded) the link is dropped and this throws `.security`: going on unencrypted would
    /// hand a bonded device's data to whoever answers at its address (BLESA). Remove the
    /// bond to pair again. A refused parameter update also drops the link. A bond file that
    /// cannot be read stops it with the error naming the file, before anything is sent (a
    /// link in clear to a bonded device is what a bond that cannot be read must not become).
    public static func open(on host: HCIHost, to address: LEAddress, _ settings: ConnectSettings = ConnectSettings())
        async throws(BluetoothError) -> CentralLink
    {
        if let store = host.bondStore {
            do throws(BondStoreError) { _ = try store.bond(for: address) } catch {
                throw BluetoothError(unreadableBond: error)
            }
        }
        let link: LEConnection
        do throws(HostError) { link = try await host.connect(to: address, timeout: settings.timeout) } catch {
            throw BluetoothError("cannot connect to \(address): \(error.message)", underlying: error)
        }
        // The identity may differ from the address connected to (a resolved private address).
        let stored: Bond?
        do throws(HostError) { stored = try link.storedBond() } catch {
            await link.disconnect()
            throw BluetoothError(.security, "\(error.message): the bond cannot be read (fix or remove the file; nothing was sent in clear)", underlying: error)
        }
        var security: LinkSecurity?
        if settings.encryptWithBond, let bond = stored, bond.centralKey != nil {
            do throws(HostError) {
                if try await link.encryptWithBond() { security = link.security }
            } catch {
                await link.disconnect()
                // The link or the controller went away: say that; anything else is the key.
                if error.isLinkLoss || error.kind == .transportClosed || error.kind == .cancelled {
                    throw BluetoothError("cannot connect to \(address): \(error.message)", underlying: error)
                }
                throw BluetoothError(.security, "\(address) refused the stored bond's key (\(error.message)); "
                                     + "it may have removed its pairing information: remove the bond to pair again", underlying: error)
            }
        }
        var updated: LELinkState?
        if let wish = settings.parameters {
            do throws(HostError) { updated = try await link.updateParameters(wish.request(from: link.parameters)) } catch {
                await link.disconnect()
                throw BluetoothError("connection update refused: \(error.message)", underlying: error)
            }
        }
        // Faster links: refusals are fine (said by the caller), the link goes on as it was.
        var dataLength = LinkRequestOutcome.notAsked
        if settings.longestDataLength, let max = host.info.maximumDataLength, link.parameters.maxTxOctets < max.txOctets {
            do throws(HostError) {
                dataLength = .done(try await link.setDataLength(txOctets: max.txOctets, txTime: max.txTime))
            } catch {
                if error.isLinkLoss { throw BluetoothError("cannot connect to \(address): \(error.message)", underlying: error) }
                dataLength = .refused(error.message)
            }
        }
        var phy = LinkRequestOutcome.notAsked
        if let wanted = phyRequest(settings.phy, local: host.info.supportedPHYs, link.parameters) {
            do throws(HostError) {
                phy = .done(try await link.setPHY(tx: wanted, rx: wanted))
            } catch {
                if error.isLinkLoss { throw BluetoothError("cannot connect to \(address): \(error.message)", underlying: error) }
                phy = .refused(error.message)
            }
        }
        return CentralLink(connection: link, bondSecurity: security, updatedParameters: updated, dataLength: dataLength, phy: phy)
    }

    /// The PHYs to ask for, nil for none: `auto` asks for LE 2M when this controller has it
    /// and the device does not say it lacks it (its features may not be read yet).
    static func phyRequest(_ preference: PHYPreference, local: LEPHYSet, _ link: LELinkState) -> LEPHYSet? {
        switch preference {
        case .auto:
            guard local.contains(.le2M), link.remoteFeatures.map({ $0.contains(.le2MPHY) }) ?? true,
                  link.txPHY != .le2M || link.rxPHY != .le2M else { return nil }
            return .le2M
        case .le1M:
            return link.txPHY == .le1M && link.rxPHY == .le1M ? nil : .le1M
        case .le2M:
            return .le2M
        case .coded:
            return .leCoded
        }
    }
}

extension BluetoothError {
    /// A bond file that cannot be read: the operation stops before anything is sent.
    init(unreadableBond e: BondStoreError) {
        self.init(.security, "\(e.description): the bond cannot be read (fix or remove the file; nothing was sent)")
    }

    /// The host error's kind with a message of the caller's.
    init(_ message: String, underlying: HostError) {
        self = BluetoothError(underlying)
        self.message = message
    }
}

extension CentralLink {
    /// How long a link is held after pairing before anything else: nothing acknowledges the
    /// last key distributed, and a device that sees the link drop at once may not file the
    /// keys (BlueZ keeps an idle LE link 2 s for the same reason).
    public static let keyDistributionHold: Duration = .milliseconds(500)

    /// Pairs on `link` (bonding when the host keeps bonds) and returns once the peer has had
    /// ``keyDistributionHold`` to file the keys. The one pairing step of the CLI's `pair`
    /// and ``Peripheral/pair()``.
    public static func pair(_ link: LEConnection) async throws(BluetoothError) -> SMPPairingResult {
        let r: SMPPairingResult
        do throws(HostError) { r = try await link.pair() } catch { throw BluetoothError(error) }
        try? await Task.sleep(for: keyDistributionHold)
        return r
    }
}
