// Package s3 keeps braid's objects in an S3-compatible bucket: the
// store.Store contract, and store.Shared, so several servers may use one
// bucket and serve each other's objects.
//
//	s, err := s3.Open(ctx, s3.Config{Bucket: "braidbkt", Prefix: "objs"})
//
// The endpoint, region and credentials come from the standard AWS
// environment and files (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, ~/.aws/credentials and
// ~/.aws/config), Config.Endpoint overriding; buckets are addressed
// path-style on any endpoint but AWS's own. Open refuses a missing bucket,
// credentials the endpoint rejects and an endpoint that does not answer,
// saying what to do.
//
// # Client
//
// The client is aws-sdk-go-v2 (service/s3 and config), not minio-go. Both
// are well kept; the SDK reads the whole standard AWS configuration
// (AWS_ENDPOINT_URL[_S3], profiles, SSO, web identity) that users expect,
// which minio-go leaves to its caller, and its 18 modules are all AWS's own
// (with smithy-go), where minio-go brings a dozen third-party ones
// (klauspost/*, rs/xid, tinylib/msgp, ini, …) and a module graph of over
// 200. The price is about 3 MB more binary. Transfers use the plain API
// (no transfer manager), so the hashing and the parts are ours.
//
// # Layout
//
// Under s3://BUCKET/PREFIX/:
//
//	objects/ID         an object's bytes, under its content address
//	leases/ID          empty; its time is the object's latest refresh
//	trash/ID           an object being removed (see Collection)
//	tmp/OWNER/RANDOM   an upload in progress of one server
//	servers/OWNER      the objects one server references (store.Shared)
//
// OWNER is the server's persistent ID.
//
// # How the contract holds on S3
//
// Write, then publish. An object of at most PartSize bytes (8 MiB) is
// hashed in memory and sent in one PutObject to objects/ID with
// If-None-Match: *, so the key appears whole or not at all, and a second
// writer of the same bytes leaves the first copy alone. A bigger one
// streams as a multipart upload to tmp/OWNER/RANDOM, Uploads parts in
// flight, hashed with sha256 on the way; once complete, its id is known
// and one CopyObject publishes it to objects/ID (atomic on S3), then the
// temporary object is deleted. Nothing is staged on local disk. S3 has no
// rename, and the final key cannot be known before the last byte, so the
// price of streaming is one server-side copy of every large object.
//
// No partial object is ever visible: objects/ID is only written by a
// complete PutObject or CopyObject of bytes whose hash is ID. A Put that
// fails (the client's body cut, the caller gone, the endpoint down) aborts
// its multipart upload. A crash mid-upload leaves an incomplete multipart
// upload or a temporary object under tmp/OWNER/, never under objects/; the
// same server's next Open aborts and deletes them (other servers' are
// theirs). A bucket lifecycle rule that aborts incomplete multipart uploads
// after a day is a good second net for servers that never come back.
//
// Existing objects. A write first heads objects/ID; if the object is
// there, the write only refreshes its lease (below) and reports Existing.
// Between servers, If-None-Match settles two writers of the same bytes.
//
// # Collection
//
// An object's lease is the later of the times S3 gives objects/ID and
// leases/ID, plus one second (S3 keeps whole seconds; the lease is never
// taken for older than it may be). A refresh writes leases/ID (an empty
// object) and then heads objects/ID. The collector lists objects/,
// leases/ and trash/ (List), and removes with RemoveIfOlder:
//
//  1. head objects/ID and leases/ID; keep the object if the lease is not
//     before the cutoff;
//  2. copy objects/ID to trash/ID, delete objects/ID;
//  3. head the lease again: if a refresh came in since step 1, copy the
//     object back and keep it; else delete trash/ID and leases/ID.
//
// Within one server a lock per id orders refreshes and removals, as in
// store/local. Across servers nothing does, and the trash takes its place:
// a writer on another server that refreshed the lease after step 1 either
// found objects/ID (before step 2), and step 3 sees its refresh and brings
// the object back, or did not find it, and restores it from trash/ID
// itself (a Touch that finds neither says ErrNotFound, as the contract
// allows). Every read that misses objects/ID looks in trash/ID and restores
// from there, so an object is never lost while a removal is half done, and
// a crash between the steps leaves it in the trash for reads and the next
// collection.
//
// Servers' clocks and the S3 endpoint's must agree within a small part of
// the grace period (NTP does): leases are S3's times, cutoffs the
// collector's.
//
// # Several servers, one bucket
//
// Ids are content addresses, so any server on the bucket serves any
// object in it. Collection must also not delete what another server's jobs
// use; each server publishes the complete set of objects it references
// (its uploads, the inputs, results and unit outputs of its jobs) to
// servers/OWNER at least every TouchEvery/2, with the time the set was
// taken, and a final set when it stops cleanly (store.Shared). A collector
// reads every other server's set after taking its cutoff and keeps what
// any set names. Together with the lease rule this covers a reference made
// just before a collection: it was refreshed within grace - TouchEvery
// before being recorded, and recorded before a set taken at most
// TouchEvery ago. A set that is not final and older than StaleAfter
// (TouchEvery by default) means its server crashed or lost the bucket with
// references it may not have published: collection on the bucket waits
// (OthersRefs says ErrStaleRefs, naming the key) until that server starts
// again and publishes, or an operator deletes servers/OWNER of a server
// that is gone for good.
//
// # Failures
//
// Every request has a deadline: Timeout to connect and for an answer's
// headers, plus the bytes at 1 MiB/s for a request that carries them; a
// response body that sends nothing for Timeout fails the read. The SDK
// tries a request three times. An endpoint that is down, unreachable,
// stalled or failing on its side (5xx) gives store.ErrUnavailable with the
// endpoint's URL in the message; nothing half-written becomes visible, and
// the same call succeeds once the endpoint is back.
package s3
