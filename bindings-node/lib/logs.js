// Observing: the core's log records, published on the `zklock` diagnostics channel.
'use strict'

const diagnosticsChannel = require('node:diagnostics_channel')

const { native } = require('./native')

/**
 * The core's log records, published on the diagnostics channel `zklock` as
 * `{ level, event, message, fields }`: a settled acquire at 'debug', a new session and a
 * reconnect at 'info', lease state changes (suspended, held again, lost) and session breaks at
 * 'warn'. Quiet by default: nothing is published without a subscriber, and the 'debug' records
 * are asked of the core only when the channel has a subscriber as a client connects. Each JS
 * environment has its own channel and sink (the addon routes a record to the environment its
 * client was made in), so this environment's sink gets its own clients' records only.
 */
const logChannel = diagnosticsChannel.channel('zklock')

function installLogSink() {
  native.setLogSink(
    (record) => {
      if (logChannel.hasSubscribers) logChannel.publish(record)
    },
    logChannel.hasSubscribers ? 'debug' : 'info',
  )
}

module.exports = { installLogSink, logChannel }
