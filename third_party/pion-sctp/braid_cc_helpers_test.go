// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

// Test helpers for associations running reno, whose state is the
// controller's.

// reno returns the association's controller, which must be reno.
func (a *Association) reno() *reno { return a.cc.(*reno) } //nolint:forcetypeassert

// setCWND sets reno's cwnd (at least MinCwnd) and publishes it.
func (a *Association) setCWND(cwnd uint32) {
	a.reno().setCwnd(cwnd)
	a.syncCwnd()
}

// recoveryCut is reno's cut for another loss of the window Fast Recovery
// began with.
func (a *Association) recoveryCut() {
	a.reno().recoveryCut(a.MTU())
	a.syncCwnd()
}
