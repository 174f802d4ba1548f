from django.db import migrations, models

# Which ready job a wake-up with nothing of its own to do should take (grove.kernel.jobs.run).
#
# A wake-up names one job of one account; once a batch has taken that job, the message
# used to do nothing, so new work — another account's, or another kind's — waited at the
# back of the queue behind every such stale wake-up (after an import, thousands). Now a
# stale wake-up runs a batch of the oldest ready work of any active account instead. Row
# level security keeps the runtime role from seeing other accounts' jobs, so the lookup
# is a security-definer function run by the schema owner, for whom a SELECT-only policy
# lifts the account filter on grove_job (as `lexical_lookup` does for notes, notebooks
# 0007). It returns an account id and a job kind, nothing else (`ready_at` is the
# caller's clock, the one `claim` uses); the caller then claims in that account's tenant
# transaction, as for any job. EXECUTE is revoked from PUBLIC and granted to the runtime
# role after every migrate (grove.runtime.dbroles).
OLDEST_READY = """
DO $$ BEGIN
    EXECUTE format('CREATE POLICY job_dispatch ON grove_job FOR SELECT TO %I USING (true)',
                   current_user);
END $$;

CREATE FUNCTION grove_job_oldest_ready(kinds text[], ready_at timestamptz)
RETURNS TABLE (account_id uuid, kind text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.account_id, r.kind
    FROM unnest(kinds) AS k(kind)
    CROSS JOIN LATERAL (
        SELECT j.account_id, j.kind, j.run_after
        FROM public.grove_job j
        JOIN public.grove_account a ON a.id = j.account_id AND a.is_active
        WHERE j.status = 'queued' AND j.kind = k.kind AND j.run_after <= ready_at
        ORDER BY j.run_after
        LIMIT 1
    ) r
    ORDER BY r.run_after
    LIMIT 1
$$;
REVOKE EXECUTE ON FUNCTION grove_job_oldest_ready(text[], timestamptz) FROM PUBLIC;
"""

DROP = """
DROP FUNCTION IF EXISTS grove_job_oldest_ready(text[], timestamptz);
DROP POLICY IF EXISTS job_dispatch ON grove_job;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("grove", "0007_redeemed_codes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(condition=models.Q(("finished_at__isnull", False)),
                               fields=["account", "kind", "finished_at"], name="job_finished"),
        ),
        migrations.RunSQL(OLDEST_READY, DROP),
    ]
