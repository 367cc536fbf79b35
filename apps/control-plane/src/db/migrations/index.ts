// A static migration provider: migrations are TS modules listed here (no filesystem globbing, so the bundle works).
import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001_ledger.js';
import * as m0002 from './0002_admission.js';
import * as m0003 from './0003_scoring_vocabulary.js';
import * as m0004 from './0004_queue_kind.js';
import * as m0005 from './0005_assert.js';
import * as m0007 from './0007_leases.js';
import * as m0008 from './0008_runners.js';
import * as m0009 from './0009_trajectories.js';
import * as m0010 from './0010_cascade_jobs.js';
import * as m0011 from './0011_aged_wfq.js';
import * as m0012 from './0012_runner_journals.js';
import * as m0013 from './0013_hot_runs.js';
import * as m0014 from './0014_sessions.js';
import * as m0015 from './0015_agents.js';
import * as m0016 from './0016_headlog.js';
import * as m0017 from './0017_one_owner_columns.js';
import * as m0018 from './0018_session_channels.js';
import * as m0019 from './0019_agent_call_groups.js';
import * as m0020 from './0020_session_relay.js';
import * as m0021 from './0021_released_counters.js';
import * as m0022 from './0022_narrow_updates.js';
import * as m0023 from './0023_agent_hosts.js';
import * as m0024 from './0024_log_batches.js';
import * as m0025 from './0025_lean_run_writes.js';
import * as m0026 from './0026_session_execs.js';
import * as m0027 from './0027_runner_sandbox_kind.js';
import * as m0028 from './0028_subscription_enabled_at.js';
import * as m0029 from './0029_agent_turn_declines.js';
import * as m0030 from './0030_lost_attempts.js';
import * as m0031 from './0031_agent_turn_fairness.js';
import * as m0032 from './0032_session_exec_marks.js';
import * as m0033 from './0033_attestations_by_run.js';
import * as m0034 from './0034_host_admin_actors.js';
import * as m0035 from './0035_headlog_trigger_plan.js';
import * as m0036 from './0036_runner_artifacts_address.js';
import * as m0037 from './0037_firing_detail.js';

const MIGRATIONS: Record<string, Migration> = {
  '0001_ledger': m0001,
  '0002_admission': m0002,
  '0003_scoring_vocabulary': m0003,
  '0004_queue_kind': m0004,
  '0005_assert': m0005,
  '0007_leases': m0007,
  '0008_runners': m0008,
  '0009_trajectories': m0009,
  '0010_cascade_jobs': m0010,
  '0011_aged_wfq': m0011,
  '0014_sessions': m0014,
  '0012_runner_journals': m0012,
  '0013_hot_runs': m0013,
  '0015_agents': m0015,
  '0016_headlog': m0016,
  '0017_one_owner_columns': m0017,
  '0018_session_channels': m0018,
  '0019_agent_call_groups': m0019,
  '0020_session_relay': m0020,
  '0021_released_counters': m0021,
  '0022_narrow_updates': m0022,
  '0023_agent_hosts': m0023,
  '0024_log_batches': m0024,
  '0025_lean_run_writes': m0025,
  '0026_session_execs': m0026,
  '0027_runner_sandbox_kind': m0027,
  '0028_subscription_enabled_at': m0028,
  '0029_agent_turn_declines': m0029,
  '0030_lost_attempts': m0030,
  '0031_agent_turn_fairness': m0031,
  '0032_session_exec_marks': m0032,
  '0033_attestations_by_run': m0033,
  '0034_host_admin_actors': m0034,
  '0035_headlog_trigger_plan': m0035,
  '0036_runner_artifacts_address': m0036,
  '0037_firing_detail': m0037,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return MIGRATIONS;
  },
};
