from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Contract audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from contracteval_site.startup import resume_collector

        # the last app to be ready: everything start-up imported exists now
        resume_collector()
