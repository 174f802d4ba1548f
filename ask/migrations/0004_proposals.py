"""Proposals: changes an answer proposes, applied and undone by the owner (SPEC §8). An
account row like a turn: row-level security, and its turn must be of the same account."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls


class Migration(migrations.Migration):

    dependencies = [
        ('ask', '0003_client_ids'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(model_name="turn", name="tidy",
                            field=models.JSONField(blank=True, null=True)),
        migrations.CreateModel(
            name='Proposal',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('position', models.PositiveSmallIntegerField()),
                ('kind', models.CharField(blank=True, choices=[('edit', 'Edit'), ('create', 'Create'), ('merge', 'Merge'), ('organise', 'Organise'), ('archive', 'Archive'), ('restore', 'Restore'), ('delete', 'Delete')], max_length=16)),
                ('state', models.CharField(choices=[('proposed', 'Proposed'), ('applied', 'Applied'), ('undone', 'Undone'), ('dropped', 'Dropped')], default='proposed', max_length=16)),
                ('summary', models.CharField(blank=True, max_length=300)),
                ('change', models.JSONField(default=dict)),
                ('preview', models.JSONField(default=dict)),
                ('fingerprint', models.JSONField(default=dict)),
                ('applied', models.JSONField(blank=True, null=True)),
                ('drop_reason', models.CharField(blank=True, max_length=64)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('applied_at', models.DateTimeField(blank=True, null=True)),
                ('undone_at', models.DateTimeField(blank=True, null=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('turn', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='proposals', to='ask.turn')),
            ],
            options={
                'db_table': 'ask_proposal',
                'ordering': ['position'],
                'constraints': [models.UniqueConstraint(fields=('turn', 'position'), name='proposal_position_unique'), models.CheckConstraint(condition=models.Q(('state__in', ['proposed', 'applied', 'undone', 'dropped'])), name='proposal_state_valid'), models.CheckConstraint(condition=models.Q(('kind__in', ['edit', 'create', 'merge', 'organise', 'archive', 'restore', 'delete']), ('state', 'dropped'), _connector='OR'), name='proposal_kind_valid'), models.CheckConstraint(condition=models.Q(models.Q(('state', 'dropped'), models.Q(('drop_reason', ''), _negated=True)), models.Q(models.Q(('state', 'dropped'), _negated=True), ('drop_reason', '')), _connector='OR'), name='proposal_dropped_iff_reason'), models.CheckConstraint(condition=models.Q(models.Q(('state__in', ['applied', 'undone']), _negated=True), models.Q(('applied__isnull', False), ('applied_at__isnull', False)), _connector='OR'), name='proposal_applied_has_record')],
            },
        ),
        enable_rls("ask_proposal"),
        migrations.RunSQL(
            [
                "ALTER TABLE ask_turn ADD CONSTRAINT turn_account_id_key UNIQUE (account_id, id)",
                "ALTER TABLE ask_proposal ADD CONSTRAINT proposal_turn_same_account "
                "FOREIGN KEY (account_id, turn_id) REFERENCES ask_turn (account_id, id)",
            ],
            [
                "ALTER TABLE ask_proposal DROP CONSTRAINT proposal_turn_same_account",
                "ALTER TABLE ask_turn DROP CONSTRAINT turn_account_id_key",
            ],
        ),
    ]
