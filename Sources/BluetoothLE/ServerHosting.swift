import BluetoothSecurity

// The application layer's peripheral role: a GATT server given the links centrals open,
// and advertising that moves to a new private address on schedule. The one way `serve`,
// `chat` and PeripheralManager host a database.

extension GATTServer {
    /// Gives the server every link a central opens on `host` (the server keeps each link's
    /// state: MTU, subscriptions, a bonded client's restored configuration) until the host
    /// stops; returns why it stopped, nil when the calling task was cancelled first (the
    /// host's incoming links end with that: once per host).
    public func serveIncomingLinks(of host: HCIHost) async -> HostError? {
        for await link in host.incomingConnections { attach(link) }
        if Task.isCancelled { return nil }
        return host.terminationReason ?? HostError(.cancelled, "the host stopped")
    }
}

/// A new resolvable private address from `irk` (Core Vol 6 Part B §1.3.2.2), with a fresh
/// random part.
public func makeResolvablePrivateAddress(_ irk: UInt128) throws(BluetoothError) -> BluetoothAddress {
    var g = SystemRandomNumberGenerator()
    do { return try ResolvablePrivateAddress.make(irk: irk, random: UInt32(truncatingIfNeeded: g.next() as UInt64)) } catch {
        throw BluetoothError(.invalidRequest, "cannot make a private address: \(error)")
    }
}

/// Which address a peripheral advertises from (Core Vol 6 Part B §1.3).
public enum AdvertisingAddressChoice: Sendable, Hashable {
    /// The controller's public address; a random static one when it has none.
    case automatic
    /// A random static address even when the controller has a public one.
    case randomStatic
    /// Privacy: resolvable private addresses made with our `irk` (the public address stays
    /// the identity bonded centrals learn, so the controller must have one).
    case privateAddress(irk: UInt128)
}

extension HCIHost {
    /// The address to advertise from as `choice` says, and how it reads (for the user): the
    /// one place `serve`, `chat`, `l2cap listen` and PeripheralManager choose it, so a
    /// controller without a public address never advertises from 00:00:00:00:00:00.
    public func advertisingAddress(_ choice: AdvertisingAddressChoice)
        throws(BluetoothError) -> (own: AdvertisingConfiguration.OwnAddress, address: LEAddress) {
        var g = SystemRandomNumberGenerator()
        switch choice {
        case .privateAddress(let irk):
            guard info.address != .zero else {
                throw BluetoothError(.invalidRequest, "privacy needs a controller with a public address (the identity bonded centrals learn)")
            }
            let a = try makeResolvablePrivateAddress(irk)
            return (.resolvablePrivate(a), LEAddress(a, type: .random))
        case .randomStatic:
            let a = BluetoothAddress.randomStatic(using: &g)
            return (.randomStatic(a), LEAddress(a, type: .random))
        case .automatic:
            guard info.address == .zero else { return (.public, LEAddress(info.address, type: .public)) }
            let a = BluetoothAddress.randomStatic(using: &g)
            return (.randomStatic(a), LEAddress(a, type: .random))
        }
    }

    /// Advertises `configuration` from a new resolvable private address made with `irk`
    /// every `period` (Core Vol 3 Part C §10.7.1.2; the links stay as they are), until the
    /// task is cancelled (then returns) or advertising cannot restart (throws). `moved`
    /// hears each new address. The first address is the configuration's own.
    public func rotatePrivateAddress(_ configuration: AdvertisingConfiguration, irk: UInt128, every period: Duration,
                                     moved: (LEAddress) -> Void) async throws(BluetoothError) {
        var current = configuration
        while true {
            do { try await Task.sleep(for: period) } catch { return }
            let a = try makeResolvablePrivateAddress(irk)
            current.ownAddress = .resolvablePrivate(a)
            await stopAdvertising()
            do throws(HostError) { _ = try await startAdvertising(current) } catch {
                throw BluetoothError(error.kind == .cancelled ? .cancelled : .unavailable,
                                     "cannot advertise from the next private address: \(error.message)", underlying: error)
            }
            moved(LEAddress(a, type: .random))
        }
    }
}
