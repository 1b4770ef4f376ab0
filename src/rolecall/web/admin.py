"""Admin pages: accounts, projects (role spec + bot), members."""

from __future__ import annotations

import yaml
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.errors import ConfigError, describe_validation
from rolecall.store import Project, ProjectMember, Role, User, WebSession
from rolecall.store.models import utcnow
from rolecall.web.auth import UserTaken, add_user, same_user
from rolecall.web.deps import DB, ID, Refused, admin, admin_writer, dialect_insert, page
from rolecall.web.once import Once, answered, repeat_of
from rolecall.web.settings import BotConfig, ProjectSettings

router = APIRouter()
MAX_SPEC = 100_000  # characters of a role spec


@router.get("/admin")
def overview(request: Request, _login: WebSession = Depends(admin), db: Session = DB):
    users = db.scalars(select(User).order_by(User.username)).all()
    projects = db.scalars(select(Project).order_by(Project.name)).all()
    members = {
        p.id: [
            u.username
            for u in db.scalars(
                select(User)
                .join(ProjectMember, ProjectMember.user_id == User.id)
                .where(ProjectMember.project_id == p.id)
                .order_by(User.username)
            )
        ]
        for p in projects
    }
    return page(request, "admin.html", users=users, projects=projects, members=members)


@router.post("/admin/users")
def create_user(
    username: str = Form(..., max_length=64),
    password: str = Form(..., max_length=256),
    role: Role = Form(Role.ANNOTATOR),
    _login: WebSession = Depends(admin_writer),
    db: Session = DB,
):
    try:
        add_user(db, username, password, role)
    except UserTaken:
        if not same_user(db, username, password, role):
            raise
    return RedirectResponse("/admin", status_code=303)  # the same form again: done already


def project_settings(spec_yaml: str, bot: BotConfig, show_judge: bool) -> ProjectSettings:
    try:
        spec = yaml.safe_load(spec_yaml)
    except yaml.YAMLError as exc:
        raise Refused(422, "the role spec is not valid YAML: {problem}", problem=str(exc)) from None
    try:
        return ProjectSettings(spec=spec, bot=bot, show_judge=show_judge)
    except ValidationError as exc:
        raise Refused(
            422,
            "bad role spec: {problems} (see examples/carecall/spec.yaml)",
            problems=describe_validation(exc),
        ) from None


def add_project(db: Session, name: str, settings: ProjectSettings) -> Project:
    """A new project (the caller commits); a taken name is an error."""
    name = name.strip()
    if db.scalar(select(Project).where(Project.name == name)) is not None:
        raise ConfigError(
            f"a project named {name!r} exists",
            fix=f"pick another name, or move {name} to another bot: rolecall web set-bot {name} "
            "--bot DIR",
        )
    project = Project(name=name, settings=settings.model_dump(mode="json"))
    db.add(project)
    db.flush()
    return project


@router.post("/admin/projects")
def create_project(
    once: Once,
    name: str = Form(..., min_length=1, max_length=128),
    spec: str = Form(..., max_length=MAX_SPEC),
    bot_kind: str = Form("llm", pattern="^(llm|models)$"),
    bot_model: str = Form("", max_length=512),
    bot_path: str = Form("", max_length=1024),
    show_judge: bool = Form(False),
    login: WebSession = Depends(admin_writer),
    db: Session = DB,
):
    if repeat := repeat_of(db, login, once, "/admin"):
        return repeat
    try:
        bot = BotConfig(
            kind=bot_kind, model=bot_model.strip() or None, path=bot_path.strip() or None
        )
    except ValidationError as exc:
        raise Refused(422, "bad bot: {problems}", problems=describe_validation(exc)) from None
    add_project(db, name, project_settings(spec, bot, show_judge))
    return answered(db, once, "/admin")


def set_project_bot(project: Project, bot: BotConfig) -> tuple[BotConfig, BotConfig]:
    """Move a project to another bot (a new version of its bot directory, or a model);
    the caller commits. Every later bot turn records the new bot's version, so the
    dashboard's error rates per version set the two side by side. Returns (old, new)."""
    from rolecall.web.settings import parse_settings

    settings = parse_settings(project.settings)
    project.settings = settings.model_copy(update={"bot": bot}).model_dump(mode="json")
    return settings.bot, bot


def add_member(db: Session, project_id: int, user_id: int) -> None:
    """Make the user a member of the project; a member already is one (no error)."""
    # one statement, not check-then-insert: two identical submits both found no row and
    # both inserted, and the second failed on the unique constraint (a 500)
    statement = dialect_insert(db, ProjectMember).values(
        project_id=project_id, user_id=user_id, created=utcnow()
    )
    db.execute(statement.on_conflict_do_nothing(index_elements=["project_id", "user_id"]))


@router.post("/admin/projects/{project_id}/members")
def add_member_page(
    project_id: ID,
    username: str = Form(..., max_length=64),
    _login: WebSession = Depends(admin_writer),
    db: Session = DB,
):
    project = db.get(Project, project_id)
    user = db.scalar(select(User).where(User.username == username.strip()))
    if project is None or user is None:
        raise Refused(404, "no such project or user")
    add_member(db, project.id, user.id)
    return RedirectResponse("/admin", status_code=303)
